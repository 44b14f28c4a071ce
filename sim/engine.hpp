#pragma once
// Engine: the virtual clock and one event queue (design.md section 1). Events are ordered by
// (time, seq), where seq is taken when the event is scheduled, so events at equal times run in
// scheduling order, always. The engine knows nothing about SGD: an event is a small value
// (kind, target, payload) that the owner's handler interprets.

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/sim_time.hpp"

namespace stalesim {

// Identifies a scheduled event; used to cancel it. Value 0 is never issued.
struct EventId {
  uint64_t seq = 0;
  constexpr bool operator==(const EventId&) const = default;
};

struct Event {
  SimTime time;
  uint64_t seq = 0;
  uint32_t kind = 0;     // meaning defined by the owner
  uint32_t target = 0;   // e.g. a worker id
  uint64_t payload = 0;  // e.g. a generation counter
};

class Engine {
 public:
  SimTime now() const { return now_; }
  // Pending events, cancelled ones not counted.
  size_t pending() const { return heap_.size() - cancelled_pending_; }
  uint64_t events_run() const { return events_run_; }

  // Schedules an event at absolute time `at`. REQUIRES: at >= now().
  EventId schedule(SimTime at, uint32_t kind, uint32_t target = 0, uint64_t payload = 0) {
    if (at < now_)
      throw std::logic_error("Engine::schedule: event of kind " + std::to_string(kind) + " at " +
                             std::to_string(at.ns()) + " ns is in the past (now " +
                             std::to_string(now_.ns()) + " ns)");
    const uint64_t seq = ++last_seq_;
    if ((seq >> 6) >= finished_.size()) finished_.push_back(0);
    push(Event{at, seq, kind, target, payload});
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
      discard_cancelled_top();
      if (heap_.empty() || heap_.front().time > limit) break;
      step(handler);
    }
  }
  // The earliest pending event, or null; it may be a cancelled one. For prefetching only: the
  // event run next can differ (the running handler may schedule an earlier one).
  const Event* peek() const { return heap_.empty() ? nullptr : &heap_.front(); }
  // Makes run_until return after the current event.
  void stop() { stop_requested_ = true; }
  bool stop_requested() const { return stop_requested_; }

 private:
  // The queue is a 4-ary min-heap on (time, seq) in a vector (node i's children are 4i+1..4i+4):
  // half the depth of a binary heap, so a pop at 100,000 pending events touches half as many
  // cache lines (the per-event cost no longer grows with the number of workers as fast). The
  // order is total, so any correct heap runs the events in the same order.
  static constexpr size_t kArity = 4;
  static bool earlier(const Event& a, const Event& b) {
    return a.time != b.time ? a.time < b.time : a.seq < b.seq;
  }
  void push(const Event& e) {
    size_t i = heap_.size();
    heap_.push_back(e);
    while (i > 0) {
      const size_t parent = (i - 1) / kArity;
      if (!earlier(e, heap_[parent])) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = e;
  }
  // Removes heap_.front(). REQUIRES: !heap_.empty().
  void pop_front() {
    const Event last = heap_.back();
    heap_.pop_back();
    const size_t n = heap_.size();
    if (n == 0) return;
    size_t i = 0;
    for (;;) {
      const size_t first = kArity * i + 1;
      if (first >= n) break;
      const size_t end = std::min(first + kArity, n);
      size_t best = first;
      for (size_t c = first + 1; c < end; ++c)
        if (earlier(heap_[c], heap_[best])) best = c;
      if (!earlier(heap_[best], last)) break;
      heap_[i] = heap_[best];
      i = best;
    }
    heap_[i] = last;
  }
  bool finished(uint64_t seq) const { return (finished_[seq >> 6] >> (seq & 63)) & 1U; }
  void mark_finished(uint64_t seq) { finished_[seq >> 6] |= uint64_t{1} << (seq & 63); }
  void discard_cancelled_top() {
    while (cancelled_pending_ > 0 && !heap_.empty() && finished(heap_.front().seq)) {
      --cancelled_pending_;
      pop_front();
    }
  }
  bool pop(Event& out) {
    discard_cancelled_top();
    if (heap_.empty()) return false;
    out = heap_.front();
    pop_front();
    mark_finished(out.seq);
    return true;
  }

  std::vector<Event> heap_;
  // One bit per issued seq: set once the event has run or been cancelled (1 bit per event).
  std::vector<uint64_t> finished_ = std::vector<uint64_t>(1, 0);
  size_t cancelled_pending_ = 0;
  SimTime now_;
  uint64_t last_seq_ = 0;
  uint64_t events_run_ = 0;
  bool stop_requested_ = false;
};

}  // namespace stalesim
