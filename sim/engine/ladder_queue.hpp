#pragma once
// The engine's event queue (sim/engine/engine.hpp): events ordered by (time, seq), the earliest
// first, whichever tier of the queue an event waited in. The engine owns cancellation; this queue
// holds every event it is given until it is popped.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
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

class LadderQueue {
 public:
  // Events held (the engine's cancelled ones included).
  size_t size() const { return size_; }
  void push(const Event& e) {
    ++size_;
    const auto t = static_cast<uint64_t>(e.time.ns());  // >= 0: events are never in the past
    if (t < split_) {
      heap_push(e);
      if (heap_.size() >= kBig && split_ == kEverything) to_buckets();
    } else if (const uint64_t k = (t - base_) >> shift_; k < nb_) {  // t >= split_ >= base_
      buckets_[k].push_back(e);
    } else {
      far_.push_back(e);
    }
  }
  // The earliest event, or null when none is held. Moves waiting events into the heap first.
  const Event* top() {
    refill();
    return heap_.empty() ? nullptr : &heap_.front();
  }
  // Removes top(). REQUIRES: top() != nullptr.
  void pop() { pop_front(); }
  // The earliest event already in the heap, or null, without refilling; for prefetching only.
  const Event* peek() const { return heap_.empty() ? nullptr : &heap_.front(); }
  // The event in the heap after peek()'s, or null; the same caveats.
  const Event* peek_second() const {
    const size_t n = heap_.size();
    if (n < 2) return nullptr;
    size_t best = 1;
    for (size_t c = 2; c <= kArity && c < n; ++c)
      if (earlier(heap_[c], heap_[best])) best = c;
    return &heap_[best];
  }

 private:
  // The queue. Events earlier than split_ are in heap_, a 4-ary min-heap on (time, seq) in a
  // vector (node i's children are 4i+1..4i+4). With few events pending (below kBig) that is all:
  // split_ is past every time. With many, it is a two-tier ladder queue (Tang, Goh and Thng,
  // "Ladder queue: an O(1) priority queue structure for large-scale discrete event simulation",
  // ACM TOMACS 15(3), 2005, with one rung): later events wait unsorted in buckets_[cur_, nb_),
  // bucket k holding [base_ + k 2^shift_, base_ + (k + 1) 2^shift_) (a shift, not a division, per
  // event), and the events past the last bucket unsorted in far_. When the heap runs empty the
  // next bucket moves into it; when the buckets run out, far_ is spread over new ones (about
  // kPerBucket events each, the width from the spread of the earliest 7/8 of a sample of far_)
  // and what lies beyond them stays in far_. So each event is sorted in a heap of a few dozen that
  // stays in L1 instead of in one heap of every pending event (at 100,000 workers 3 MB and 8
  // levels, the lower ones cache misses: issue 21, flat cost per worker). The heap holds exactly
  // the events before split_, so its front is the earliest pending event: the order is (time,
  // seq), as with any correct priority queue, whichever tier an event waited in.
  static constexpr size_t kArity = 4;
  static constexpr size_t kBig = 512;    // heap size from which the buckets are used
  static constexpr size_t kSmall = 256;  // events to spread below which the heap takes them all
  static constexpr size_t kPerBucket = 16;
  static constexpr uint64_t kEverything = ~uint64_t{0};  // split_ past every time: heap only
  static bool earlier(const Event& a, const Event& b) {
    return a.time != b.time ? a.time < b.time : a.seq < b.seq;
  }
  // Heap only -> buckets: every event goes to far_, to be spread at the next refill.
  void to_buckets() {
    far_.insert(far_.end(), heap_.begin(), heap_.end());
    heap_.clear();
    split_ = base_ = 0;
    cur_ = nb_ = 0;
  }
  // Fills the heap when it is empty and events wait in the buckets or far_.
  void refill() {
    while (heap_.empty()) {
      if (cur_ == nb_ && !spread_far()) return;
      std::vector<Event>& b = buckets_[cur_++];
      split_ = base_ + (uint64_t{cur_} << shift_);
      for (const Event& e : b) heap_push(e);
      b.clear();
    }
  }
  // Spreads far_ over new buckets; false when far_ is empty. REQUIRES: heap and buckets empty.
  bool spread_far() {
    if (far_.empty()) return false;
    if (far_.size() < kSmall) {  // back to the heap alone
      split_ = kEverything;
      cur_ = nb_ = 0;
      for (const Event& e : far_) heap_push(e);
      far_.clear();
      return false;
    }
    uint64_t lo = kEverything;
    for (const Event& e : far_) lo = std::min(lo, static_cast<uint64_t>(e.time.ns()));
    sample_.clear();
    for (size_t i = 0; i < far_.size(); i += far_.size() / 256)  // >= 1 apart: far_ has >= kSmall
      sample_.push_back(static_cast<uint64_t>(far_[i].time.ns()));
    const auto q = sample_.begin() + static_cast<std::ptrdiff_t>(sample_.size() * 7 / 8);
    std::nth_element(sample_.begin(), q, sample_.end());
    const uint64_t hi = std::max(*q, lo);
    nb_ = far_.size() / kPerBucket;
    // The width: (hi - lo) / nb_ + 1 rounded up to a power of two, so lo + nb_ 2^shift_ > hi and
    // <= 2 hi + 2 nb_ < 2^64 (times are below 2^63): no overflow.
    shift_ = static_cast<int>(std::bit_width((hi - lo) / nb_));
    base_ = split_ = lo;
    cur_ = 0;
    if (buckets_.size() < nb_) buckets_.resize(nb_);
    const uint64_t lim = base_ + (uint64_t{nb_} << shift_);
    size_t keep = 0;
    for (const Event& e : far_) {  // the earliest event lands in bucket 0: progress
      const auto t = static_cast<uint64_t>(e.time.ns());
      if (t < lim)
        buckets_[(t - base_) >> shift_].push_back(e);
      else
        far_[keep++] = e;
    }
    far_.resize(keep);
    return true;
  }
  void heap_push(const Event& e) {
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
    --size_;
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
  std::vector<Event> heap_;
  std::vector<std::vector<Event>> buckets_;
  std::vector<Event> far_;
  std::vector<uint64_t> sample_;  // spread_far's scratch
  uint64_t split_ = kEverything, base_ = 0;
  int shift_ = 0;
  size_t cur_ = 0, nb_ = 0;
  size_t size_ = 0;  // events in the heap, the buckets and far_, cancelled ones included
};

}  // namespace stalesim
