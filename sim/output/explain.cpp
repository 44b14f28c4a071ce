#include "sim/output/explain.hpp"

#include <fmt/format.h>

#include "sim/policies/sync_policy.hpp"

namespace stalesim {

std::string explain_seconds(SimTime t) { return fmt::format("{:.6f}", t.seconds()); }

void Narrator::start(const ClockTable& clocks, const SyncPolicy& policy) {
  clocks_ = &clocks;
  policy_ = &policy;
  calls_seen_ = 0;
  last_call_clock_.assign(static_cast<size_t>(clocks.workers()), -1);
}

std::string Narrator::bound() const { return policy_->bound_text(); }

namespace {

// A DSSP controller call in words: the gap, the intervals and the predicted push times that chose
// r* (ControllerDecision).
std::string controller_text(const ControllerDecision& d) {
  std::string text = fmt::format(
      "DSSP: worker {} (the fastest, at clock {}) is {} clock{} ahead of worker {} (clock {}), beyond "
      "s_L: ",
      d.worker, d.clock, d.clock - d.slowest_clock, d.clock - d.slowest_clock == 1 ? "" : "s", d.slowest,
      d.slowest_clock);
  if (d.slowest_step == 0)
    return text + fmt::format("no interval estimate yet (worker {} has pushed fewer than twice): grants none",
                              d.worker);
  text += fmt::format(
      "I_f = {} s, I_s = {} s; its push F_{} = {} s is the closest to worker {}'s S_{} = {} s "
      "(predicted wait {} s): ",
      explain_seconds(d.fastest_interval), explain_seconds(d.slowest_interval), d.granted,
      explain_seconds(d.fastest_at), d.slowest, d.slowest_step, explain_seconds(d.slowest_at),
      explain_seconds(d.predicted_wait));
  return text + (d.granted == 0
                     ? std::string("grants none")
                     : fmt::format("grants {} extra clock{}", d.granted, d.granted == 1 ? "" : "s"));
}

}  // namespace

std::vector<Narrator::Line> Narrator::new_controller_calls() {
  std::vector<Line> out;
  const std::vector<ControllerDecision>* calls = policy_->controller_decisions();
  if (!calls) return out;
  for (; calls_seen_ < calls->size(); ++calls_seen_) {
    const ControllerDecision& d = (*calls)[calls_seen_];
    last_call_clock_[static_cast<size_t>(d.worker)] = d.clock;
    out.push_back({d.time, d.worker, controller_text(d)});
  }
  return out;
}

std::string Narrator::blocked(int32_t worker, WaitCause cause, int64_t clock, int64_t have) const {
  const int32_t slowest = clocks_->slowest();
  const int64_t min = clocks_->min_clock();
  switch (cause) {
    case WaitCause::kPolicy: {
      std::string text = fmt::format("worker {} waits at clock {}: slowest is worker {} at clock {}, {}",
                                     worker, clock, slowest, min, bound());
      text += policy_->wait_detail(worker, clock, *clocks_, last_call_clock_[static_cast<size_t>(worker)]);
      return text;
    }
    case WaitCause::kStaleCache: {
      const int64_t s = policy_->clock_bound().value_or(0);
      return fmt::format(
          "worker {} waits at clock {}: its copy is from server clock {}, it needs >= {} ({}); slowest is "
          "worker {} at clock {}",
          worker, clock, have, clock - s, bound(), slowest, min);
    }
    case WaitCause::kValueBound:
      return fmt::format(
          "worker {} holds its update of clock {}: sending it would put the norm of its updates not yet seen "
          "by every worker above {}",
          worker, clock, bound());
  }
  return {};
}

std::optional<int32_t> Narrator::waits_for(WaitCause cause) const {
  if (cause == WaitCause::kValueBound) return std::nullopt;
  return clocks_->slowest();
}

std::string Narrator::resumed(int32_t worker, WaitCause cause, int64_t clock, SimTime waited) const {
  switch (cause) {
    case WaitCause::kPolicy:
      return fmt::format(
          "worker {} resumes at clock {} after waiting {} s: the slowest worker is now at clock {}", worker,
          clock, explain_seconds(waited), clocks_->min_clock());
    case WaitCause::kStaleCache:
      return fmt::format(
          "worker {} resumes at clock {} after waiting {} s: parameters fresh enough arrived (server clock "
          "now {})",
          worker, clock, explain_seconds(waited), clocks_->min_clock());
    case WaitCause::kValueBound:
      return fmt::format("worker {} sends its update of clock {} after holding it {} s", worker, clock,
                         explain_seconds(waited));
  }
  return {};
}

void ExplainRecorder::start(const ClockTable& clocks, const SyncPolicy& policy,
                            const std::vector<std::string>& profiles) {
  clocks_ = &clocks;
  narrator_.start(clocks, policy);
  waiting_.assign(profiles.size(), Waiting{});
  text_ = fmt::format(
      "# stalesim explain: {}: policy {}, {}; {} workers. Virtual seconds; clock = iterations pushed. "
      "Lists every wait, resume and DSSP controller call; a worker allowed to go on at once is not listed.\n",
      title_, policy.name(), narrator_.bound(), profiles.size());
}

void ExplainRecorder::add(SimTime t, const std::string& line) {
  text_ += fmt::format("t={} s  {}\n", explain_seconds(t), line);
}

void ExplainRecorder::drain() {
  for (const auto& l : narrator_.new_controller_calls()) {
    ++calls_;
    if (l.text.find("grants none") == std::string::npos) ++grants_;
    add(l.time, l.text);
  }
}

void ExplainRecorder::activity(SimTime now, int32_t worker, Activity a) {
  drain();
  Waiting& w = waiting_[static_cast<size_t>(worker)];
  if (!w.on || a == Activity::kWait) return;
  w.on = false;
  add(now, narrator_.resumed(worker, w.cause, w.clock, now - w.since));
}

void ExplainRecorder::blocked(SimTime now, int32_t worker, WaitCause cause, int64_t clock, int64_t have) {
  drain();
  ++waits_;
  waiting_[static_cast<size_t>(worker)] = Waiting{true, cause, clock, now};
  add(now, narrator_.blocked(worker, cause, clock, have));
}

void ExplainRecorder::update(SimTime, int32_t, int64_t, int64_t, int64_t) {
  drain();
  ++updates_;
}

void ExplainRecorder::finish(SimTime end) {
  drain();
  int64_t still = 0;
  for (const auto& w : waiting_) still += w.on ? 1 : 0;
  text_ += fmt::format(
      "# end at t={} s: {} updates, {} waits ({} still waiting), {} DSSP controller calls ({} granted extra "
      "clocks)\n",
      explain_seconds(end), updates_, waits_, still, calls_, grants_);
}

}  // namespace stalesim
