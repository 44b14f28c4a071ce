#include "sim/policies/sync_policy.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>

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

std::string SyncPolicy::bound_text() const {
  if (const auto b = clock_bound()) return "s = " + std::to_string(*b);
  return "policy " + name();
}

// ---- Registered policies: names, traits (sim/algorithms.hpp) and make_policy ------------------

namespace {

constexpr auto kPolicyNames = std::to_array<EnumName<PolicyType>>({
    {PolicyType::kBsp, "bsp"},
    {PolicyType::kAsp, "asp"},
    {PolicyType::kSsp, "ssp"},
    {PolicyType::kEssp, "essp"},
    {PolicyType::kDssp, "dssp"},
    {PolicyType::kVap, "vap"},
    {PolicyType::kSoftsync, "softsync"},
    {PolicyType::kAllreduceRing, "allreduce-ring"},
    {PolicyType::kAllreduceHierarchical, "allreduce-hierarchical"},
});

// One row per policy, in PolicyType order. Pull mode: every policy that fetches at every clock.
// softsync is one (its workers never wait and pull with each push); earlier versions kept two
// lists here, and the crash-event check left softsync out while uniform order and bfasgd let it
// in: crash events now accept softsync as they accept asp.
constexpr auto kPolicyTraits = std::to_array<PolicyTraits>({
    // type            cache mode                     pull  averages  worker server  fields, own protocol
    {PolicyType::kBsp, CacheMode::kPullEveryIteration, true, false, 0, 0, 0, nullptr},
    {PolicyType::kAsp, CacheMode::kPullEveryIteration, true, false, 0, 0, 0, nullptr},
    {PolicyType::kSsp, CacheMode::kPullEveryIteration, true, false, 0, 0, kPolicyStaleness | kPolicyCache,
     nullptr},
    {PolicyType::kEssp, CacheMode::kEager, false, false, 0, 0, kPolicyStaleness, nullptr},
    {PolicyType::kDssp, CacheMode::kPullEveryIteration, true, false, 0, 0, kPolicyStaleness | kPolicyRange,
     nullptr},
    {PolicyType::kVap, CacheMode::kPullEveryIteration, false, false, 3, 0, kPolicyValueBound,
     make_vap_protocol},
    {PolicyType::kSoftsync, CacheMode::kPullEveryIteration, true, true, 0, 1, kPolicyN, nullptr},
    // All-reduce: no server, no fetch (sim/policies/allreduce.hpp); its workers keep a gradient.
    {PolicyType::kAllreduceRing, CacheMode::kPullEveryIteration, false, false, 0, 0, 0,
     make_allreduce_protocol},
    {PolicyType::kAllreduceHierarchical, CacheMode::kPullEveryIteration, false, false, 0, 0, 0,
     make_allreduce_protocol},
});

static_assert(in_enum_order(kPolicyTraits));

}  // namespace

std::span<const EnumName<PolicyType>> enum_names(PolicyType) { return kPolicyNames; }
const PolicyTraits& traits(PolicyType t) { return kPolicyTraits[static_cast<size_t>(t)]; }

std::unique_ptr<SyncPolicy> make_policy(const PolicySpec& spec, int32_t workers) {
  switch (spec.type) {
    case PolicyType::kBsp:
      return std::make_unique<BspPolicy>();
    case PolicyType::kAsp:
      return std::make_unique<AspPolicy>();
    case PolicyType::kSsp:
      return std::make_unique<SspPolicy>(spec.staleness, spec.cache);
    case PolicyType::kEssp:
      return std::make_unique<EsspPolicy>(spec.staleness);
    case PolicyType::kVap:
      return std::make_unique<VapPolicy>(spec.value_bound);
    case PolicyType::kSoftsync:
      return std::make_unique<SoftsyncPolicy>(spec.n);
    case PolicyType::kDssp:
      return std::make_unique<DsspPolicy>(spec.staleness, spec.range, spec.dssp_grant, workers);
    case PolicyType::kAllreduceRing:
      return std::make_unique<AllreducePolicy>(AllReduce::kRing);
    case PolicyType::kAllreduceHierarchical:
      return std::make_unique<AllreducePolicy>(AllReduce::kHierarchical);
  }
  throw std::invalid_argument("unknown policy type");
}

// The policy's own numbers, for what looks at a scenario before a run (the estimates): the policy
// answers (one worker sizes what it keeps per worker; neither answer depends on the count).
bool PolicySpec::lockstep() const { return make_policy(*this, 1)->lockstep(); }
std::optional<int64_t> PolicySpec::clock_bound() const { return make_policy(*this, 1)->clock_bound(); }
std::optional<AllReduce> PolicySpec::all_reduce() const { return make_policy(*this, 1)->all_reduce(); }

}  // namespace stalesim
