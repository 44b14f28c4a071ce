#pragma once
// All-reduce instead of a parameter server (issue 33): every iteration each worker computes its
// gradient on the parameters every worker holds, the workers sum their gradients among themselves
// and every worker applies the sum, so all start the next iteration on the same new parameters.
// The math is BSP's (sim/policies/bsp.hpp): clock staleness is always 0.
//   ring: the bandwidth-optimal ring of Patarasuk and Yuan ("Bandwidth optimal all-reduce
//     algorithms for clusters of workstations", J. Parallel Distrib. Comput. 69(2), 2009), as
//     Baidu's ring all-reduce and Horovod (Sergeev and Del Balso, "Horovod: fast and easy
//     distributed deep learning in TensorFlow", arXiv 1802.05799, 2018) run it: the gradient is
//     cut into N chunks, N - 1 reduce-scatter steps then N - 1 all-gather steps, in each of which
//     every worker sends one chunk to its successor.
//   hierarchical: reduce inside each rack to the rack's first worker, a ring all-reduce across the
//     racks' leaders, a broadcast inside each rack: the hierarchical all-reduce of Jia et al.,
//     "Highly scalable deep learning training system with mixed-precision: training ImageNet in
//     four minutes", arXiv 1807.11205, 2018.
// The times and the order of application are the worker protocol's (sim/worker/allreduce.cpp).

#include "sim/policies/sync_policy.hpp"

namespace stalesim {

class AllreducePolicy final : public SyncPolicy {
 public:
  explicit AllreducePolicy(AllReduce kind) : kind_(kind) {}
  std::string bound_text() const override { return "all-reduce (s = 0)"; }
  // Never asked: a worker starts its next iteration when its part of the collective is done.
  bool may_start(int32_t, const ClockTable&) override { return true; }
  std::optional<int64_t> clock_bound() const override { return 0; }
  bool lockstep() const override { return true; }
  std::optional<AllReduce> all_reduce() const override { return kind_; }

 private:
  AllReduce kind_;
};

}  // namespace stalesim
