#pragma once
// WorkerProtocol: how a worker's data flows between it and the server, one implementation per
// flow, each with its own per-worker state: pull every iteration (sim/worker/pull.*), lazy cache
// and ESSP (cache.cpp), VAP (vap_protocol.cpp), uniform order (uniform.cpp). The simulation
// routes each worker event to the run's protocol; what every flow shares is the worker core's
// (sim/worker/core.hpp; DESIGN.md section 3).

#include <memory>

#include "sim/engine/engine.hpp"
#include "sim/worker/core.hpp"

namespace stalesim {

class WorkerProtocol {
 public:
  explicit WorkerProtocol(WorkerCore& c) : c_(c) {}
  virtual ~WorkerProtocol() = default;
  // At time 0: the first requests for parameters (and the schedule's crashes).
  virtual void start();
  // Parameters reach w (kParamsArrive, or kSnapshotArrives in the cache modes).
  virtual void on_params(Worker& w) = 0;
  // w finished computing its gradient.
  virtual void on_compute_done(Worker& w) = 0;
  // The server has received w's whole push: apply it.
  virtual void on_push_applied(Worker& w) = 0;
  // Any other event of the protocol's (a request reaching the server, VAP's refresh, the uniform
  // order's step). Worker events come here only when their generation is current.
  virtual void on_message(const Event& e) = 0;
  // w crashed (WorkerCore::crash): what was on its way to it is lost.
  virtual void on_crash(Worker& w) { (void)w; }
  // Whether gradients may be computed ahead on a pool (pull modes: the parameters are fixed when
  // the server reads them).
  virtual bool pool_allowed() const { return false; }

 protected:
  WorkerCore& c_;
};

// The protocol for the run's policy (WorkerCore::policy()), cache mode and order.
std::unique_ptr<WorkerProtocol> make_protocol(WorkerCore& c);

// Each protocol that STALESIM_POLICIES (sim/algorithms.hpp) names: make_NAME_protocol, defined
// in its own file here (make_ps_protocol: protocol.cpp, the parameter server's flows).
#define STALESIM_DECLARE_PROTOCOL(value, protocol) \
  std::unique_ptr<WorkerProtocol> make_##protocol##_protocol(WorkerCore& c);
STALESIM_POLICIES(STALESIM_DECLARE_PROTOCOL)
#undef STALESIM_DECLARE_PROTOCOL

}  // namespace stalesim
