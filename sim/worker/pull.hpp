#pragma once
// Pull every iteration (BSP, SSP, DSSP, ASP, n-softsync; MXNet-style): a worker's push carries its
// request for the next parameters; when the push is applied the policy grants the next clock or
// the worker waits at the server. B-FASGD's transfer gate may skip a push or a fetch.

#include <optional>
#include <span>
#include <vector>

#include "sim/worker/protocol.hpp"

namespace stalesim {

class PullProtocol : public WorkerProtocol {
 public:
  explicit PullProtocol(WorkerCore& c);
  void on_params(Worker& w) override;
  void on_compute_done(Worker& w) override { send_push(w); }
  void on_push_applied(Worker& w) override;
  void on_message(const Event& e) override;
  bool pool_allowed() const override { return gate_ == nullptr; }

 protected:
  // The push leaves (after the transfer gate's say, when the rule has one); the request for the
  // next parameters rides on it.
  void send_push(Worker& w);
  // Applies w's gradient at the server (`info` says what it was computed on); its step, or
  // nullopt when the loss diverged (the run is then stopped).
  virtual std::optional<double> apply_gradient(Worker& w, GradientInfo& info);
  // Applies a gradient computed on w's parameters with training loss `loss`: records the loss, or
  // stops the run when it is not finite (nullopt); else the rule's step.
  std::optional<double> apply_computed(Worker& w, const GradientInfo& info, double loss,
                                       std::span<const float> g);

 private:
  // B-FASGD (LearningRule::transfer_gate): a worker's own transmission draws and the last
  // gradient it pushed, which the server re-applies for a skipped push. By worker id; empty
  // without a gate. (Whether the current push and fetch are skipped is in Worker: the core's
  // grant reads it.)
  struct GateState {
    Rng transmit_rng{0};
    std::vector<float> last_grad;
    bool has_last_grad = false;
    int64_t last_grad_version = 0;  // the version last_grad was computed on
  };
  const TransferGate* gate_;
  std::vector<GateState> gated_;
};

}  // namespace stalesim
