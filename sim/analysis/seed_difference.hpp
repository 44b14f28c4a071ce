#pragma once
// The difference of two groups of seeds and its verdict (`stalesim summarize SWEEP --compare`,
// `stalesim report`), by the rule of the paper claims (scenarios/papers/README.md, under the claim
// table; plots/papers-protocol.json "rule", protocol change P19): d = mean(A) - mean(B), its
// standard error SE = sqrt(sd(A)^2 / n_A + sd(B)^2 / n_B) (sample standard deviations, unpaired),
// Welch's degrees of freedom df, and the verdict "A higher" where P(T_df > d / SE) is below the
// rule's level kVerdictLevel (0.0228 one-sided: two standard errors in the large-sample limit),
// "A lower" where P(T_df < d / SE) is, else "inconclusive" (also where a side has fewer than 2
// seeds: no standard error). With 5 seeds a side df is about 8, where two standard errors on the
// normal would be a 4% level, not 2.3%. The rule is symmetric: swapping A and B swaps higher and
// lower and nothing else.
//
// One rule, two languages: plots/papers_claims.py (rule, se_of, mean) computes the claim table and
// this file computes the comparisons; tests/test_seed_difference.cpp feeds both the same recorded
// per-seed numbers (plots/figures/papers-claims.json) and requires the same d, SE and verdict, so
// the two cannot drift apart unnoticed. papers_claims.py's "reproduced" is our "A higher" with A
// the side the paper says is higher, "contradicted" our "A lower", "inconclusive" ours.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace stalesim {

struct SeedDifference {
  size_t n_a = 0, n_b = 0;
  double mean_a = 0, mean_b = 0;
  double d = 0;              // mean_a - mean_b
  std::optional<double> se;  // none when n_a < 2 or n_b < 2
  std::optional<double> df;  // Welch's degrees of freedom; none without se or where se is 0
  std::string verdict;       // "A higher", "A lower" or "inconclusive"
};

// The rule's one-sided level: P(Z > 2) for a standard normal Z.
inline constexpr double kVerdictLevel = 0.022750131948179195;

// P(T > t) for Student's t with df degrees of freedom (any real df > 0); none: the normal.
double t_sf(double t, std::optional<double> df);

// REQUIRES: a and b not empty. The sums run in the order given.
SeedDifference seed_difference(const std::vector<double>& a, const std::vector<double>& b);

// The verdict of one difference with standard error se and degrees of freedom df (above):
// "A higher", "A lower" or "inconclusive" (also with no se, or d not finite).
std::string difference_verdict(double d, const std::optional<double>& se, std::optional<double> df);

}  // namespace stalesim
