#pragma once
// Compute-time jitter (DESIGN.md section 3; issue 5): one factor of mean 1 per iteration, drawn
// from the worker's own stream with our samplers (base/rng.hpp), or an iteration time replayed
// from a trace of measured times. The standard library's distributions are not used: they differ
// between implementations and would break the determinism contract.

#include <string>
#include <vector>

#include "base/rng.hpp"
#include "sim/scenario/cluster_spec.hpp"

namespace stalesim {

class JitterSampler {
 public:
  // `where` is the JSON path of the spec, for errors ("/cluster/jitter"). Reads the trace file of
  // a "trace" spec; throws ScenarioError naming the file (and line) when it cannot.
  JitterSampler(const JitterSpec& spec, const std::string& where);

  // The time of one iteration whose modelled time is `base_ns`, in ns (before rounding). Draws
  // from `rng` only when the spec is random, so "none" and "constant" leave the stream untouched.
  double sample_ns(double base_ns, Rng& rng) const;

  // The factor's theoretical mean and variance (the trace's empirical ones, relative to its mean,
  // for "trace"): what the tests hold the samplers to.
  double mean_factor() const;
  double variance_factor() const;

  const std::vector<double>& trace_ms() const { return trace_ms_; }

 private:
  JitterSpec spec_;
  std::vector<double> trace_ms_;
  double trace_mean_ms_ = 0.0;
};

// Reads a trace of iteration times in ms: numbers separated by whitespace or commas, '#' starts a
// comment. Throws ScenarioError "<path>:<line>: ..." for a value that is not a positive number,
// and "<path>: ..." when the file cannot be read or holds no value.
std::vector<double> read_iteration_trace(const std::string& path);

}  // namespace stalesim
