#include "sim/gradient_pool.hpp"

#include <algorithm>
#include <exception>
#include <thread>
#include <utility>

namespace stalesim {

GradientPool::GradientPool(Model& caller_model, std::vector<std::unique_ptr<Model>> helpers,
                           const Dataset& data)
    : caller_model_(caller_model), helper_models_(std::move(helpers)), data_(data) {
  threads_.reserve(helper_models_.size());
  for (size_t i = 0; i < helper_models_.size(); ++i) threads_.emplace_back([this, i] { helper_loop(i); });
}

GradientPool::~GradientPool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    for (GradientTask* t : queue_) t->state = GradientTask::State::kIdle;
    queue_.clear();
  }
  work_.notify_all();
  for (auto& th : threads_) th.join();
}

void GradientPool::run(GradientTask& t, Model& m) {
  try {
    if (t.work)
      t.work(m);
    else
      t.loss = m.loss_and_gradient(t.params, data_, t.batch, t.grad);
  } catch (...) {
    t.error = std::current_exception();
  }
  {
    std::lock_guard lock(mu_);
    t.state = GradientTask::State::kDone;
  }
  done_.notify_all();
}

void GradientPool::helper_loop(size_t index) {
  Model& m = *helper_models_[index];
  std::unique_lock lock(mu_);
  for (;;) {
    work_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    GradientTask* t = queue_.front();
    queue_.pop_front();
    t->state = GradientTask::State::kRunning;
    lock.unlock();
    run(*t, m);
    lock.lock();
  }
}

void GradientPool::submit(GradientTask& t) {
  {
    std::lock_guard lock(mu_);
    t.error = nullptr;
    t.state = GradientTask::State::kQueued;
    queue_.push_back(&t);
  }
  work_.notify_one();
}

bool GradientPool::unqueue(GradientTask& t) {
  const auto it = std::find(queue_.begin(), queue_.end(), &t);
  if (it == queue_.end()) return false;
  queue_.erase(it);
  return true;
}

GradientTask* GradientPool::oldest_gradient() {
  const auto it = std::find_if(queue_.begin(), queue_.end(), [](const GradientTask* q) { return !q->work; });
  if (it == queue_.end()) return nullptr;
  GradientTask* t = *it;
  queue_.erase(it);
  return t;
}

bool GradientPool::done(const GradientTask& t) {
  std::lock_guard lock(mu_);
  return t.state == GradientTask::State::kDone;
}

void GradientPool::wait(GradientTask& t) {
  std::unique_lock lock(mu_);
  while (t.state != GradientTask::State::kDone) {
    if (t.state == GradientTask::State::kQueued) {
      unqueue(t);
      t.state = GradientTask::State::kRunning;
      lock.unlock();
      run(t, caller_model_);
      lock.lock();
    } else if (GradientTask* other = oldest_gradient()) {  // a helper runs it: help meanwhile
      other->state = GradientTask::State::kRunning;
      lock.unlock();
      run(*other, caller_model_);
      lock.lock();
    } else {
      done_.wait(lock);
    }
  }
  t.state = GradientTask::State::kIdle;
  lock.unlock();
  if (t.error) std::rethrow_exception(std::exchange(t.error, nullptr));
}

void GradientPool::cancel(GradientTask& t) {
  std::unique_lock lock(mu_);
  if (t.state == GradientTask::State::kQueued) unqueue(t);
  done_.wait(lock, [&t] { return t.state != GradientTask::State::kRunning; });
  t.state = GradientTask::State::kIdle;
  t.error = nullptr;
}

int default_threads() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

}  // namespace stalesim
