#pragma once
// Evaluations: the test-set evaluation of each metrics row (eval.every_s), at once on the event
// loop's thread or, with a gradient pool, in the background (issue 21).
//
// An evaluation is a pure function of the parameters at the row's time, so it may be computed on
// any thread at any wall time after that, as long as the rows are completed (the observer told,
// appended to the results, the target checked) in the order they were recorded. In background
// mode `add` copies the parameters and queues the evaluation on the pool as a background task
// (GradientPool: helpers take it, the event loop does not), and the loop goes on; finished rows
// are handed to `complete`, oldest first, whenever the caller looks (`add`, `deliver_ready`) and
// all of them by `finish`. The model instance that evaluates (the caller's or a helper's clone,
// Model::clone) computes the same bits on every thread, the same data in the same chunks and
// order, so the rows are the same bytes as at once, for any thread count.
//
// Only when nothing on the event loop depends on the result before the rows are delivered: the
// caller keeps the immediate mode when an observer sees rows as they happen or when reaching the
// target accuracy stops the run (stop.at_target), where the next events depend on the row.
// Memory: at most `max_in_flight` evaluations (their parameter copies) wait at once; the next
// `add` first waits for the oldest (computing it on the caller's thread if no helper took it).

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "models/dataset.hpp"
#include "models/model.hpp"
#include "sim/gradient_pool.hpp"
#include "sim/output/run_result.hpp"

namespace stalesim {

// Writes an evaluation's test loss, accuracy and model metric into `row` (what it reports).
void apply_evaluation(const Evaluation& e, MetricsRow& row);

class Evaluations {
 public:
  // `model` evaluates on the caller's thread; `test` and `indices` (the test samples, all when
  // empty) must outlive this object. `complete` receives each evaluated row, in order of `add`.
  Evaluations(Model& model, const Dataset& test, std::span<const int32_t> indices,
              std::function<void(MetricsRow&)> complete);
  // Waits for what is in flight on the pool (without delivering it).
  ~Evaluations();
  Evaluations(const Evaluations&) = delete;
  Evaluations& operator=(const Evaluations&) = delete;

  // Background mode on `pool` with at most `max_in_flight` (>= 1) evaluations waiting; null:
  // immediate mode. Evaluations in flight are finished and delivered first (call this with null
  // before the pool goes).
  void use_pool(GradientPool* pool, int max_in_flight);
  bool background() const { return pool_ != nullptr; }
  // Evaluates `params` into `row` (whose other fields are set), now or in the background, and
  // delivers what is ready. The parameters may change once this returns.
  void add(MetricsRow row, std::span<const float> params);
  // Delivers the finished rows at the front (none may wait behind an unfinished one).
  void deliver_ready();
  // Waits for and delivers every row in flight.
  void finish();
  // Evaluations in flight (background mode).
  size_t in_flight() const { return pending_.size(); }
  // Evaluations queued on a pool so far.
  int64_t background_count() const { return background_count_; }

 private:
  struct Pending {
    MetricsRow row;
    std::vector<float> params;  // the copy evaluated
    Evaluation result;
    GradientTask task;  // work: evaluates `params` into `result`
  };
  void deliver_front();  // waits for the oldest, completes its row, frees it

  Model& model_;
  const Dataset& test_;
  std::span<const int32_t> indices_;
  std::function<void(MetricsRow&)> complete_;
  GradientPool* pool_ = nullptr;
  size_t max_in_flight_ = 1;
  std::deque<std::unique_ptr<Pending>> pending_;  // oldest first
  std::vector<std::unique_ptr<Pending>> spare_;   // delivered, for reuse (their buffers kept)
  int64_t background_count_ = 0;
};

}  // namespace stalesim
