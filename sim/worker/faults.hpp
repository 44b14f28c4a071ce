#pragma once
// The schedule's crashes and rejoins (issue 5). A crash loses whatever the worker had in flight:
// its compute, its push (unless applied), its pull. Under on_crash "drop" it also leaves the
// minimum-clock computation, so synchronous policies proceed without it; under "wait" they wait
// for it. The time down counts as waiting.

#include "sim/worker/core.hpp"

namespace stalesim {

// At time 0: one kCrash event per crash, and one kRejoin for each crash that rejoins.
void schedule_crashes(WorkerCore& c);
void on_crash(WorkerCore& c, Worker& w);
void on_rejoin(WorkerCore& c, Worker& w);
// The rejoined worker asks for leave and parameters like any worker after a push.
void on_rejoin_request(WorkerCore& c, Worker& w);

}  // namespace stalesim
