#pragma once
// The option values of a scenario that are neither an algorithm (sim/algorithms.hpp), a model
// (models/model.hpp) nor a dataset (sim/data/dataset.hpp): each an enum class with its names, as
// scenario files spell them and outputs write them. The loader parses each name once
// (sim/scenario/fields_*.cpp lists enum_name_list<E>() as the allowed values); everything after it
// switches on the enum. tests/layers/check_layers.sh fails when an option value is compared as a
// string outside sim/scenario/.

#include <span>

#include "base/enum_names.hpp"

namespace stalesim {

// policy.dssp_grant: how a DSSP grant counts (sim/policies/dssp.hpp).
enum class DsspGrant { kBounded, kLiteral, kUnbounded };
STALESIM_ENUM_NAMES(DsspGrant, {DsspGrant::kBounded, "bounded"}, {DsspGrant::kLiteral, "literal"},
                    {DsspGrant::kUnbounded, "unbounded"})

// optimizer.variant: FASGD's and B-FASGD's form (sim/rules/fasgd.hpp).
enum class FasgdVariant { kPaper, kFred };
STALESIM_ENUM_NAMES(FasgdVariant, {FasgdVariant::kPaper, "paper"}, {FasgdVariant::kFred, "fred"})

// cluster.jitter.type (and a group's): the distribution of the compute-time factor
// (sim/worker/jitter.hpp). In documentation order.
enum class JitterType { kLognormal, kNone, kConstant, kNormal, kExponential, kGamma, kTrace };
STALESIM_ENUM_NAMES(JitterType, {JitterType::kLognormal, "lognormal"}, {JitterType::kNone, "none"},
                    {JitterType::kConstant, "constant"}, {JitterType::kNormal, "normal"},
                    {JitterType::kExponential, "exponential"}, {JitterType::kGamma, "gamma"},
                    {JitterType::kTrace, "trace"})

// cluster.jitter.scale: what a trace's times mean.
enum class TraceScale { kAbsolute, kRelative };
STALESIM_ENUM_NAMES(TraceScale, {TraceScale::kAbsolute, "absolute"}, {TraceScale::kRelative, "relative"})

// cluster.schedule[i].kind (sim/worker/cluster_schedule.hpp).
enum class ScheduleKind { kSlow, kPause, kCrash, kDrift };
STALESIM_ENUM_NAMES(ScheduleKind, {ScheduleKind::kSlow, "slow"}, {ScheduleKind::kPause, "pause"},
                    {ScheduleKind::kCrash, "crash"}, {ScheduleKind::kDrift, "drift"})

// cluster.on_crash: what synchronous policies do about a crashed worker.
enum class OnCrash { kWait, kDrop };
STALESIM_ENUM_NAMES(OnCrash, {OnCrash::kWait, "wait"}, {OnCrash::kDrop, "drop"})

// compute.backend: where the math runs (make_model's `cuda`, models/model.hpp).
enum class Backend { kCpu, kCuda };
STALESIM_ENUM_NAMES(Backend, {Backend::kCpu, "cpu"}, {Backend::kCuda, "cuda"})

// optimizer.momentum_step: when the server takes its momentum step (sim/rules/server_optimizer.hpp).
enum class MomentumStep { kPerPush, kPerClock };
STALESIM_ENUM_NAMES(MomentumStep, {MomentumStep::kPerPush, "per_push"},
                    {MomentumStep::kPerClock, "per_clock"})

// compute.timing: what times an iteration.
enum class Timing { kModelled, kMeasured };
STALESIM_ENUM_NAMES(Timing, {Timing::kModelled, "modelled"}, {Timing::kMeasured, "measured"})

}  // namespace stalesim
