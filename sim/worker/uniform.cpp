// Uniform order (cluster.order "uniform"): no times are simulated for transfers or computes;
// every worker reads the initial parameters at time 0, then at each step one worker drawn
// uniformly among those holding parameters pushes, and its update is applied at once.

#include <algorithm>
#include <cmath>

#include "sim/worker/pull.hpp"

namespace stalesim {

namespace {

// No transfer is simulated: the core hands grants and pushes to the order at once (DirectDelivery).
class UniformOrder final : public PullProtocol, public DirectDelivery {
 public:
  explicit UniformOrder(WorkerCore& c) : PullProtocol(c), rng_(c.scenario().seed, Purpose::kOrder, 0) {
    c.deliver_directly(this);
  }
  void start() override;
  // Granted: w holds parameters and is one of the workers the next step may draw.
  void on_params(Worker& w) override {
    w.seen_version = w.read_version;
    c_.set_state(w, WorkerState::kComputing);
    ready_.insert(std::upper_bound(ready_.begin(), ready_.end(), w.id), w.id);
  }
  void params_granted(Worker& w, SimTime) override { on_params(w); }
  void push_sent(Worker& w) override { on_push_applied(w); }
  void on_message(const Event& e) override {
    if (e.kind == kOrderStep) return on_step(e.payload);
    PullProtocol::on_message(e);
  }

 private:
  void on_step(uint64_t k);

  Rng rng_;
  std::vector<int32_t> ready_;  // workers holding parameters, ascending
  SimTime step_;                // virtual time per update
};

void UniformOrder::start() {
  // Every worker reads the initial parameters at time 0; then one update per step.
  double mean_ns = 0;
  for (const auto& w : c_.workers()) mean_ns += w.base_compute_ns;
  mean_ns /= static_cast<double>(c_.workers().size());
  step_ = SimTime::from_ns(
      std::max<int64_t>(1, std::llround(mean_ns / static_cast<double>(c_.workers().size()))));
  for (auto& w : c_.workers()) c_.grant(w);
  c_.engine().schedule(step_, kOrderStep, 0, 1);
}

void UniformOrder::on_step(uint64_t k) {
  if (ready_.empty()) return c_.deadlock();
  const auto pick = static_cast<size_t>(rng_.below(ready_.size()));
  Worker& w = c_.worker(static_cast<size_t>(ready_[pick]));
  ready_.erase(ready_.begin() + static_cast<std::ptrdiff_t>(pick));
  send_push(w);
  if (!c_.stopped())
    c_.engine().schedule(SimTime::from_ns(static_cast<int64_t>(k + 1) * step_.ns()), kOrderStep, 0, k + 1);
}

}  // namespace

std::unique_ptr<WorkerProtocol> make_uniform_order(WorkerCore& c) {
  return std::make_unique<UniformOrder>(c);
}

}  // namespace stalesim
