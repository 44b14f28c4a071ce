#pragma once
// Pull every iteration (BSP, SSP, DSSP, ASP, n-softsync; MXNet-style): a worker's push carries its
// request for the next parameters; when the push is applied the policy grants the next clock or
// the worker waits at the server. B-FASGD's transfer gate may skip a push or a fetch.

#include <optional>
#include <span>

#include "sim/worker/protocol.hpp"

namespace stalesim {

class PullProtocol : public WorkerProtocol {
 public:
  explicit PullProtocol(WorkerCore& c) : WorkerProtocol(c) {}
  void on_params(Worker& w) override;
  void on_compute_done(Worker& w) override { c_.send_push(w); }
  void on_push_applied(Worker& w) override;
  void on_message(const Event& e) override;
  bool pool_allowed() const override { return c_.gate == nullptr; }

 protected:
  // Applies w's gradient at the server (`info` says what it was computed on); its step, or
  // nullopt when the loss diverged (the run is then stopped).
  virtual std::optional<double> apply_gradient(Worker& w, GradientInfo& info);
  // Applies a gradient computed on w's parameters with training loss `loss`: records the loss, or
  // stops the run when it is not finite (nullopt); else the rule's step.
  std::optional<double> apply_computed(Worker& w, const GradientInfo& info, double loss,
                                       std::span<const float> g);
};

}  // namespace stalesim
