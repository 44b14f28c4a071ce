#include "sim/workloads.hpp"

#include <stdexcept>

#include "models/lda.hpp"
#include "models/lstsq.hpp"
#include "models/mf.hpp"

namespace stalesim {

bool is_workload_model(ModelType type) { return !traits(type).dataset.empty(); }

DataSplit make_workload_data(const Scenario& s) {
  if (!is_workload_model(s.model.type))
    throw std::invalid_argument("make_workload_data: model type \"" + std::string(to_string(s.model.type)) +
                                "\" is not mf, lda or lstsq");
  return traits(s.data.dataset).make(s.data, s.seed);
}

std::unique_ptr<Model> make_workload_model(const Scenario& s, const DataSplit& data) {
  switch (s.model.type) {
    case ModelType::kMf:
      return std::make_unique<MfModel>(s.data.ratings.rows, s.data.ratings.cols, s.model.rank, s.model.l2);
    case ModelType::kLda:
      return std::make_unique<LdaModel>(data.train, s.data.corpus.vocabulary, s.model.topics, s.model.alpha,
                                        s.model.beta, s.seed);
    case ModelType::kLstsq:
      return std::make_unique<LstsqModel>(s.data.lstsq, s.seed);
    default:
      throw std::invalid_argument("make_workload_model: model type \"" +
                                  std::string(to_string(s.model.type)) + "\" is not mf, lda or lstsq");
  }
}

}  // namespace stalesim
