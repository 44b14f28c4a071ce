#include "sim/evaluation.hpp"

#include <stdexcept>
#include <utility>

namespace stalesim {

void apply_evaluation(const Evaluation& e, MetricsRow& row) {
  if (e.has_loss) row.test_loss = e.loss;
  if (e.has_accuracy) row.test_accuracy = e.accuracy;
  row.metric = e.metric;
}

Evaluations::Evaluations(Model& model, const Dataset& test, std::span<const int32_t> indices,
                         std::function<void(MetricsRow&)> complete)
    : model_(model), test_(test), indices_(indices), complete_(std::move(complete)) {}

Evaluations::~Evaluations() {
  if (pool_)
    for (auto& p : pending_) pool_->cancel(p->task);
}

void Evaluations::use_pool(GradientPool* pool, int max_in_flight) {
  if (pool && max_in_flight < 1) throw std::invalid_argument("Evaluations: max_in_flight must be >= 1");
  finish();
  pool_ = pool;
  max_in_flight_ = pool ? static_cast<size_t>(max_in_flight) : 1;
}

void Evaluations::add(MetricsRow row, std::span<const float> params) {
  if (!pool_) {
    finish();  // none in flight in immediate mode; kept for the order should that change
    apply_evaluation(model_.evaluate(params, test_, indices_), row);
    complete_(row);
    return;
  }
  deliver_ready();
  while (pending_.size() >= max_in_flight_) deliver_front();
  std::unique_ptr<Pending> p;
  if (!spare_.empty()) {
    p = std::move(spare_.back());
    spare_.pop_back();
  } else {
    p = std::make_unique<Pending>();
    Pending* raw = p.get();
    p->task.work = [this, raw](Model& m) { raw->result = m.evaluate(raw->params, test_, indices_); };
  }
  p->row = std::move(row);
  p->params.assign(params.begin(), params.end());
  pool_->submit(p->task);
  ++background_count_;
  pending_.push_back(std::move(p));
}

void Evaluations::deliver_front() {
  Pending& p = *pending_.front();
  pool_->wait(p.task);  // rethrows what evaluate threw
  apply_evaluation(p.result, p.row);
  std::unique_ptr<Pending> done = std::move(pending_.front());
  pending_.pop_front();
  spare_.push_back(std::move(done));
  complete_(spare_.back()->row);
}

void Evaluations::deliver_ready() {
  while (!pending_.empty() && pool_->done(pending_.front()->task)) deliver_front();
}

void Evaluations::finish() {
  while (!pending_.empty()) deliver_front();
}

}  // namespace stalesim
