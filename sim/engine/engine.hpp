#pragma once
// Engine: the virtual clock and one event queue (DESIGN.md section 1). Events are ordered by
// (time, seq), where seq is taken when the event is scheduled, so events at equal times run in
// scheduling order, always. The engine knows nothing about SGD: an event is a small value
// (kind, target, payload) that the owner's handler interprets.

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/sim_time.hpp"
#include "sim/engine/ladder_queue.hpp"

namespace stalesim {

class Engine {
 public:
  SimTime now() const { return now_; }
  // Pending events, cancelled ones not counted.
  size_t pending() const { return queue_.size() - cancelled_pending_; }
  uint64_t events_run() const { return events_run_; }

  // Schedules an event at absolute time `at`. REQUIRES: at >= now().
  EventId schedule(SimTime at, uint32_t kind, uint32_t target = 0, uint64_t payload = 0) {
    if (at < now_)
      throw std::logic_error("Engine::schedule: event of kind " + std::to_string(kind) + " at " +
                             std::to_string(at.ns()) + " ns is in the past (now " +
                             std::to_string(now_.ns()) + " ns)");
    const uint64_t seq = ++last_seq_;
    if ((seq >> 6) >= finished_.size()) finished_.push_back(0);
    queue_.push(Event{at, seq, kind, target, payload});
    return EventId{seq};
  }
  EventId schedule_in(SimTime delay, uint32_t kind, uint32_t target = 0, uint64_t payload = 0) {
    return schedule(now_ + delay, kind, target, payload);
  }
  // Cancels a pending event. Returns false if it already ran, was cancelled, or never existed.
  bool cancel(EventId id) {
    if (id.seq == 0 || id.seq > last_seq_ || finished(id.seq)) return false;
    mark_finished(id.seq);
    ++cancelled_pending_;
    return true;
  }

  // Runs the next event through handler(const Event&). Returns false when none is pending.
  template <class Handler>
  bool step(Handler&& handler) {
    Event e;
    if (!pop(e)) return false;
    now_ = e.time;
    ++events_run_;
    handler(e);
    return true;
  }

  // Runs events with time <= limit until none is left, the limit is passed, or stop() is called.
  // The clock ends at the last event run (it does not jump to `limit`).
  template <class Handler>
  void run_until(SimTime limit, Handler&& handler) {
    stop_requested_ = false;
    while (!stop_requested_) {
      const Event* next = next_live();
      if (next == nullptr || next->time > limit) break;
      step(handler);
    }
  }
  // The earliest pending event, or null; it may be a cancelled one. For prefetching only: the
  // event run next can differ (the running handler may schedule an earlier one), and it is null
  // while the next events still wait in the queue's buckets.
  const Event* peek() const { return queue_.peek(); }
  // The pending event after peek()'s, or null; the same caveats.
  const Event* peek_second() const { return queue_.peek_second(); }
  // Makes run_until return after the current event.
  void stop() { stop_requested_ = true; }
  bool stop_requested() const { return stop_requested_; }

 private:
  bool finished(uint64_t seq) const { return (finished_[seq >> 6] >> (seq & 63)) & 1U; }
  void mark_finished(uint64_t seq) { finished_[seq >> 6] |= uint64_t{1} << (seq & 63); }
  // The earliest pending event not cancelled (cancelled ones before it are dropped), or null.
  const Event* next_live() {
    const Event* top = queue_.top();
    while (cancelled_pending_ > 0 && top != nullptr && finished(top->seq)) {
      --cancelled_pending_;
      queue_.pop();
      top = queue_.top();
    }
    return top;
  }
  bool pop(Event& out) {
    const Event* top = next_live();
    if (top == nullptr) return false;
    out = *top;
    queue_.pop();
    mark_finished(out.seq);
    return true;
  }

  LadderQueue queue_;
  // One bit per issued seq: set once the event has run or been cancelled (1 bit per event).
  std::vector<uint64_t> finished_ = std::vector<uint64_t>(1, 0);
  size_t cancelled_pending_ = 0;
  SimTime now_;
  uint64_t last_seq_ = 0;
  uint64_t events_run_ = 0;
  bool stop_requested_ = false;
};

}  // namespace stalesim
