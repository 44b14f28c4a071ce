#pragma once
// B-FASGD, bandwidth-aware FASGD (Odena, 2016, arXiv 1601.04033): FASGD's update, plus the same
// statistics let workers skip transfers when little has changed. At each chance to fetch
// parameters (and, separately, to push a gradient) a worker transmits only if
//     u < 1 / (1 + c / (v_bar + 1e-4)),   u uniform on [0, 1) from the worker's own stream,
// with v_bar the mean over all parameters of the server's moving-average statistic and separate
// c_fetch and c_push. A skipped fetch keeps computing on the old copy (its staleness keeps growing
// and is counted truthfully); a skipped push makes the server re-apply that worker's last gradient.

#include "sim/rules/fasgd.hpp"

namespace stalesim {

class BfasgdRule final : public FasgdRule, public TransferGate {
 public:
  BfasgdRule(const OptimizerSpec& spec, int64_t parameters)
      : FasgdRule(spec, parameters), c_fetch_(spec.c_fetch), c_push_(spec.c_push) {}
  double fetch_probability() const override { return probability(c_fetch_); }
  double push_probability() const override { return probability(c_push_); }
  const TransferGate* transfer_gate() const override { return this; }

 private:
  double probability(double c) const { return 1.0 / (1.0 + c / (mean_statistic() + 1e-4)); }
  double c_fetch_, c_push_;
};

}  // namespace stalesim
