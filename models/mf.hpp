#pragma once
// Matrix factorization (issue 6, point 2): a synthetic ratings matrix of known low rank with
// power-law row and column popularity, and the model that fits it by SGD on observed entries
// (Koren, Bell and Volinsky, "Matrix factorization techniques for recommender systems", IEEE
// Computer 2009; the ESSP paper's MF workload, Dai et al., AAAI 2015).
//
// Data layout: one observation per sample, features = 3: x = (row, column, rating), row and
// column stored as exact float integers (< 2^24), y = 0. Parameters: the row factors U
// (rows x rank, row-major: row i's rank values are contiguous), then the column factors V
// (cols x rank, row-major).

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "models/dataset.hpp"
#include "models/model.hpp"

namespace stalesim {

// The generator (scenario: data.ratings). Entries of the true factors are N(0, rank^-1/4), so a
// noise-free rating u_i . v_j has variance 1; rating = u_i . v_j + N(0, noise). Observed
// (row, column) pairs are drawn without repetition with P(row i) proportional to
// (i + 1)^-popularity and P(column j) proportional to (j + 1)^-popularity (a Zipf law: row 0 is
// the most popular); the first `train` are the training set, the next `test` the test set.
struct RatingsSpec {
  int32_t rows = 500;
  int32_t cols = 500;
  int32_t rank = 5;
  double noise = 0.1;       // standard deviation of the rating noise, >= 0
  int64_t train = 40000;    // observed entries for training
  int64_t test = 5000;      // held-out entries
  double popularity = 0.5;  // Zipf exponent of row and column popularity, >= 0 (0 = uniform)
  bool operator==(const RatingsSpec&) const = default;
};

struct Ratings {
  DataSplit split;
  std::vector<float> u, v;  // the true factors, rows x rank and cols x rank, row-major
};

// REQUIRES-checked (std::invalid_argument): positive sizes, rows and cols < 2^24, train + test
// <= rows x cols / 2 (so that drawing distinct pairs stays fast), finite noise >= 0.
// Streams: Purpose::kData, entities 10 (factors), 11 (pairs), 12 (noise).
Ratings generate_ratings(const RatingsSpec& spec, uint64_t seed);

// The model (model.type "mf"). Loss per observation (i, j, r):
//   0.5 (u_i . v_j - r)^2 + 0.5 l2 (|u_i|^2 + |v_j|^2),
// averaged over the batch; only the rows and columns the batch touched get a gradient, so the
// L2 term acts on touched rows only (as in per-observation SGD). Evaluation: test_loss is the
// mean squared error on the evaluated entries (no L2), metric "test_rmse" its square root.
class MfModel final : public Model {
 public:
  MfModel(int32_t rows, int32_t cols, int32_t rank, double l2);
  std::string type() const override { return "mf"; }
  int64_t parameter_count() const override { return (int64_t{rows_} + cols_) * rank_; }
  // 10 x rank per observation: 2 rank for the prediction, 8 rank for the two rows' gradients
  // (error times the other row, plus l2 times the row, scaled by 1/batch, accumulated).
  double flops_per_sample() const override { return 10.0 * rank_; }
  // A pull carries every factor row (dense reads: parameter_count() x 4 bytes).
  int64_t wire_bytes() const override { return parameter_count() * 4; }
  // A push carries only the rows the batch touched: (distinct rows + distinct columns) x
  // (rank x 4 value bytes + 4 index bytes).
  int64_t update_bytes(const Dataset& data, std::span<const int32_t> batch) override;
  // Rows: the row factors (0 .. rows-1), then the column factors (rows .. rows+cols-1).
  int64_t row_count() const override { return int64_t{rows_} + cols_; }
  void changed_rows(const Dataset& data, std::span<const int32_t> batch, std::vector<int32_t>& rows) override;
  int64_t row_bytes(int32_t) const override { return int64_t{rank_} * 4 + 4; }
  std::string metric_name() const override { return "test_rmse"; }

  // N(0, 0.1) per entry from `rng`.
  void init(std::span<float> params, Rng& rng) override;
  double loss_and_gradient(std::span<const float> params, const Dataset& data,
                           std::span<const int32_t> indices, std::span<float> grad) override;
  Evaluation evaluate(std::span<const float> params, const Dataset& data,
                      std::span<const int32_t> indices) override;

  int32_t rank() const { return rank_; }

 private:
  int32_t rows_, cols_, rank_;
  float l2_;
  std::vector<int32_t> scratch_;
};

}  // namespace stalesim
