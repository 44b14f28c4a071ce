#include "sim/policies/sync_policy.hpp"

#include <algorithm>
#include <array>

#include "sim/policies/allreduce.hpp"
#include "sim/policies/asp.hpp"
#include "sim/policies/bsp.hpp"
#include "sim/policies/dssp.hpp"
#include "sim/policies/essp.hpp"
#include "sim/policies/softsync.hpp"
#include "sim/policies/ssp.hpp"
#include "sim/policies/vap.hpp"

namespace stalesim {

ClockTable::ClockTable(int32_t workers) : clocks_(static_cast<size_t>(workers), 0), at_clock_(1, workers) {}

bool ClockTable::advance(int32_t w) {
  int64_t& c = clocks_[static_cast<size_t>(w)];
  const auto old_index = static_cast<size_t>(c - min_);
  ++c;
  if (c > max_) max_ = c;
  if (old_index + 1 >= at_clock_.size()) at_clock_.push_back(0);
  --at_clock_[old_index];
  ++at_clock_[old_index + 1];
  update_tree(w);
  if (old_index == 0 && at_clock_[0] == 0) {
    // The minimum rises by exactly one: every worker is at >= min_ + 1 now.
    at_clock_.pop_front();
    ++min_;
    return true;
  }
  return false;
}

bool ClockTable::drop(int32_t w) {
  if (dropped_.empty()) dropped_.assign(clocks_.size(), false);
  dropped_[static_cast<size_t>(w)] = true;
  update_tree(w);
  --at_clock_[static_cast<size_t>(clocks_[static_cast<size_t>(w)] - min_)];
  bool rose = false;
  while (at_clock_.size() > 1 && at_clock_.front() == 0) {
    at_clock_.pop_front();
    ++min_;
    rose = true;
  }
  return rose;
}

void ClockTable::rejoin(int32_t w) {
  dropped_[static_cast<size_t>(w)] = false;
  int64_t& c = clocks_[static_cast<size_t>(w)];
  c = std::max(c, min_);
  max_ = std::max(max_, c);
  const auto index = static_cast<size_t>(c - min_);
  if (index >= at_clock_.size()) at_clock_.resize(index + 1, 0);
  ++at_clock_[index];
  update_tree(w);
}

// a before b as the slowest: live first, then the lower clock, then the lower id (-1: no worker).
bool ClockTable::better(int32_t a, int32_t b) const {
  if (b < 0) return a >= 0;
  if (a < 0) return false;
  const bool da = dropped(a), db = dropped(b);
  if (da != db) return db;
  const int64_t ca = clocks_[static_cast<size_t>(a)], cb = clocks_[static_cast<size_t>(b)];
  return ca != cb ? ca < cb : a < b;
}

void ClockTable::update_tree(int32_t w) {
  if (tree_.empty()) return;
  size_t i = (size_ + static_cast<size_t>(w)) / 2;
  for (; i >= 1; i /= 2) {
    const int32_t a = tree_[2 * i], b = tree_[2 * i + 1];
    tree_[i] = better(a, b) ? a : b;
  }
}

int32_t ClockTable::slowest() const {
  if (tree_.empty()) {
    size_ = 1;
    while (size_ < clocks_.size()) size_ *= 2;
    tree_.assign(2 * size_, -1);
    for (size_t w = 0; w < clocks_.size(); ++w) tree_[size_ + w] = static_cast<int32_t>(w);
    for (size_t i = size_ - 1; i >= 1; --i) {
      const int32_t a = tree_[2 * i], b = tree_[2 * i + 1];
      tree_[i] = better(a, b) ? a : b;
    }
  }
  return std::max(0, tree_[1]);
}

std::string SyncPolicy::name() const { return type_ ? std::string(enum_name(*type_)) : std::string(); }

std::string SyncPolicy::bound_text() const {
  if (const auto b = clock_bound()) return "s = " + std::to_string(*b);
  return "policy " + name();
}

// ---- Registered policies: one row each (sim/algorithms.hpp) ----------------------------------

namespace {

template <class P>
std::unique_ptr<SyncPolicy> make_plain(const PolicySpec&, int32_t) {
  return std::make_unique<P>();
}

// One row per policy, in PolicyType order. Pull mode: every policy that fetches at every clock.
// softsync is one (its workers never wait and pull with each push); earlier versions kept two
// lists here, and the crash-event check left softsync out while uniform order and bfasgd let it
// in: crash events now accept softsync as they accept asp.
constexpr auto kPolicies = std::to_array<PolicyTraits>({
    {.type = PolicyType::kBsp, .name = "bsp", .pull_mode = true, .make = make_plain<BspPolicy>},
    {.type = PolicyType::kAsp, .name = "asp", .pull_mode = true, .make = make_plain<AspPolicy>},
    {.type = PolicyType::kSsp,
     .name = "ssp",
     .pull_mode = true,
     .fields = kPolicyStaleness | kPolicyCache,
     .make = [](const PolicySpec& s, int32_t) -> std::unique_ptr<SyncPolicy> {
       return std::make_unique<SspPolicy>(s.staleness, s.cache);
     }},
    {.type = PolicyType::kEssp,
     .name = "essp",
     .cache = CacheMode::kEager,
     .fields = kPolicyStaleness,
     .make = [](const PolicySpec& s, int32_t) -> std::unique_ptr<SyncPolicy> {
       return std::make_unique<EsspPolicy>(s.staleness);
     }},
    {.type = PolicyType::kDssp,
     .name = "dssp",
     .pull_mode = true,
     .fields = kPolicyStaleness | kPolicyRange,
     .make = [](const PolicySpec& s, int32_t workers) -> std::unique_ptr<SyncPolicy> {
       return std::make_unique<DsspPolicy>(s.staleness, s.range, s.dssp_grant, workers);
     }},
    {.type = PolicyType::kVap,
     .name = "vap",
     .worker_vectors = 3,
     .fields = kPolicyValueBound,
     .make = [](const PolicySpec& s, int32_t) -> std::unique_ptr<SyncPolicy> {
       return std::make_unique<VapPolicy>(s.value_bound);
     }},
    {.type = PolicyType::kSoftsync,
     .name = "softsync",
     .pull_mode = true,
     .averages_pushes = true,
     .server_vectors = 1,
     .fields = kPolicyN,
     .make = [](const PolicySpec& s, int32_t) -> std::unique_ptr<SyncPolicy> {
       return std::make_unique<SoftsyncPolicy>(s.n);
     }},
    // All-reduce: no server, no fetch (sim/policies/allreduce.hpp); its workers keep a gradient.
    {.type = PolicyType::kAllreduceRing,
     .name = "allreduce-ring",
     .make = [](const PolicySpec&, int32_t) -> std::unique_ptr<SyncPolicy> {
       return std::make_unique<AllreducePolicy>(AllReduce::kRing);
     }},
    {.type = PolicyType::kAllreduceHierarchical,
     .name = "allreduce-hierarchical",
     .make = [](const PolicySpec&, int32_t) -> std::unique_ptr<SyncPolicy> {
       return std::make_unique<AllreducePolicy>(AllReduce::kHierarchical);
     }},
});

static_assert(in_enum_order(kPolicies));
constexpr auto kPolicyNames = names_of(kPolicies);

}  // namespace

std::span<const EnumName<PolicyType>> enum_names(PolicyType) { return kPolicyNames; }
const PolicyTraits& traits(PolicyType t) { return kPolicies[static_cast<size_t>(t)]; }

std::unique_ptr<SyncPolicy> make_policy(const PolicySpec& spec, int32_t workers) {
  std::unique_ptr<SyncPolicy> p = traits(spec.type).make(spec, workers);
  p->type_ = spec.type;
  return p;
}

// The policy's own numbers, for what looks at a scenario before a run (the estimates): the policy
// answers (one worker sizes what it keeps per worker; neither answer depends on the count).
bool PolicySpec::lockstep() const { return make_policy(*this, 1)->lockstep(); }
std::optional<int64_t> PolicySpec::clock_bound() const { return make_policy(*this, 1)->clock_bound(); }
std::optional<AllReduce> PolicySpec::all_reduce() const { return make_policy(*this, 1)->all_reduce(); }

}  // namespace stalesim
