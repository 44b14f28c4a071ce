#pragma once
// Non-iid sharding of a classification training set across workers (issue 6, point 4).
//
// "label-skew" follows Hsu, Qi and Brown, "Measuring the effects of non-identical data
// distribution for federated visual classification" (arXiv 1909.06335, 2019): every worker w
// draws a label mix q_w ~ Dirichlet(alpha, ..., alpha) over the classes, and shards keep the iid
// sizes (they differ by at most one; the first N mod W workers get one more). Samples are dealt
// round-robin, one per worker per round in worker order: the worker draws a label from q_w
// restricted to the labels with samples left (renormalized) and takes the next sample of that
// label (each label's samples in a seeded shuffled order). Every sample goes to exactly one
// worker. Small alpha (0.1) gives most workers one or two labels; large alpha (100) is close to
// iid. Labels run out as the deal proceeds, so late rounds are less skewed than alpha alone says,
// and a shard larger than a label's sample count cannot hold that label only.
// All draws come from one stream (Purpose::kShard, entity 1); Dirichlet draws are normalized
// Gamma(alpha, 1) draws from Rng::gamma, taken in log form for alpha < 1 so that tiny alphas
// cannot underflow.

#include <cstdint>
#include <span>
#include <vector>

namespace stalesim {

// Shards of sample indices [0, labels.size()), each sorted ascending. REQUIRES: labels in
// [0, classes), classes >= 1, workers >= 1, alpha > 0 and finite, labels.size() < 2^31.
std::vector<std::vector<int32_t>> shard_label_skew(std::span<const int32_t> labels, int32_t classes,
                                                   int32_t workers, double alpha, uint64_t seed);

// A Dirichlet(alpha, ..., alpha) draw over out.size() categories, written to `out` (sums to 1).
class Rng;
void dirichlet(Rng& rng, double alpha, std::span<double> out);

}  // namespace stalesim
