#include "sim/workloads.hpp"

#include <stdexcept>

#include "models/lda.hpp"
#include "models/lstsq.hpp"
#include "models/mf.hpp"

namespace stalesim {

bool is_workload_model(const std::string& type) { return type == "mf" || type == "lda" || type == "lstsq"; }

DataSplit make_workload_data(const Scenario& s) {
  if (s.data.dataset == "ratings") return generate_ratings(s.data.ratings, s.seed).split;
  if (s.data.dataset == "corpus") return generate_corpus(s.data.corpus, s.seed).split;
  if (s.data.dataset == "lstsq") return generate_lstsq(s.data.lstsq);
  throw std::invalid_argument("make_workload_data: dataset \"" + s.data.dataset +
                              "\" is not ratings, corpus or lstsq");
}

std::unique_ptr<Model> make_workload_model(const Scenario& s, const DataSplit& data) {
  if (s.model.type == "mf")
    return std::make_unique<MfModel>(s.data.ratings.rows, s.data.ratings.cols, s.model.rank, s.model.l2);
  if (s.model.type == "lda")
    return std::make_unique<LdaModel>(data.train, s.data.corpus.vocabulary, s.model.topics, s.model.alpha,
                                      s.model.beta, s.seed);
  if (s.model.type == "lstsq") return std::make_unique<LstsqModel>(s.data.lstsq, s.seed);
  throw std::invalid_argument("make_workload_model: model type \"" + s.model.type +
                              "\" is not mf, lda or lstsq");
}

}  // namespace stalesim
