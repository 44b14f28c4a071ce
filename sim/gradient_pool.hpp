#pragma once
// GradientPool: computes begun gradients on other threads, ahead of the events that apply them
// (issue 21). A gradient is a pure function of the parameters a worker read and its batch, so it
// may be computed on any thread at any wall time between the read and the apply; the simulation
// still applies gradients in event order, waiting (GradientPool::wait) only when the one it needs
// is not ready. Each thread computes with its own Model instance (Model::clone: its own scratch)
// and the same single-threaded Eigen kernels with the same blocking (EIGEN_DONT_PARALLELIZE, cache
// sizes pinned once per process), so a gradient is bit for bit the same whichever thread runs it,
// and the outputs do not depend on the thread count.
//
// Threads: `threads` in all, the caller's counting as one: threads - 1 helper threads take tasks
// in submission order; the caller, when it waits, runs the task it needs itself if no helper has
// taken it yet, and otherwise helps with the oldest queued task meanwhile.
//
// Tasks are owned by the caller, submitted, then either waited for or cancelled, each exactly
// once, from the caller's thread. The parameters a task reads must stay unchanged until then
// (ParamStore::pin).
//
// Background tasks (GradientTask::work set: the test-set evaluations of sim/evaluation.hpp) run
// `work` with the thread's model instead of a gradient. Helpers take them in submission order
// like gradients, but the caller, while it waits for a gradient, never helps with one: a
// background task is long (a whole evaluation) and nothing on the event loop waits for it, so
// the caller taking one would hold up the gradients it needs next while the helpers ran dry.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include "models/dataset.hpp"
#include "models/model.hpp"

namespace stalesim {

struct GradientTask {
  std::span<const float> params;  // read-only while the task is pending
  std::vector<int32_t> batch;     // the batch's sample indices
  std::vector<float> grad;        // out: the gradient (sized by the caller)
  double loss = 0.0;              // out: the batch's mean loss
  std::exception_ptr error;       // out: what loss_and_gradient threw, rethrown by wait
  const void* pin = nullptr;      // the caller's: what keeps `params` valid (ParamStore::pin)
  // Set: a background task, which runs work(model) instead of a gradient (params, batch, grad and
  // loss unused); what it computes stays in what `work` captured.
  std::function<void(Model&)> work;
  enum class State { kIdle, kQueued, kRunning, kDone } state = State::kIdle;  // guarded by the pool
};

class GradientPool {
 public:
  // `caller_model` computes on the caller's thread and stays the caller's; `helpers` (threads - 1
  // clones of it, Model::clone) are moved to the helper threads. `data` is read by all.
  GradientPool(Model& caller_model, std::vector<std::unique_ptr<Model>> helpers, const Dataset& data);
  // Cancels what is queued and waits for what runs.
  ~GradientPool();
  GradientPool(const GradientPool&) = delete;
  GradientPool& operator=(const GradientPool&) = delete;

  int threads() const { return static_cast<int>(threads_.size()) + 1; }
  // Queues `t` (REQUIRES: state kIdle or kDone, params and batch set, grad sized).
  void submit(GradientTask& t);
  // Returns once `t` is computed (running it here if no helper has taken it); rethrows its error.
  void wait(GradientTask& t);
  // Drops `t`: unqueued if no helper has taken it, else waited for. Never throws its error.
  void cancel(GradientTask& t);
  // Whether `t` (submitted, not yet waited for) is computed: wait(t) would return at once.
  bool done(const GradientTask& t);

 private:
  void helper_loop(size_t index);
  void run(GradientTask& t, Model& m);  // computes t (no lock held), then marks it done
  bool unqueue(GradientTask& t);        // under the lock: removes t from the queue if there
  GradientTask* oldest_gradient();      // under the lock: unqueues the oldest non-background task

  Model& caller_model_;
  std::vector<std::unique_ptr<Model>> helper_models_;
  const Dataset& data_;
  std::mutex mu_;
  std::condition_variable work_;  // a task was queued, or stop
  std::condition_variable done_;  // a task finished
  std::deque<GradientTask*> queue_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

// The machine's cores (at least 1): threads for a run when the user names none. The CLI reads
// STALESIM_THREADS first (tools/cli.cpp); the library never reads the environment.
int default_threads();

}  // namespace stalesim
