// All-reduce's worker protocol (sim/policies/allreduce.hpp; issue 33): no server, no pull. Each
// iteration a worker computes its gradient on the parameters it holds; when it is ready the worker
// takes part in the collective, whose every transfer is a message on the same links the parameter
// server's traffic uses (the star: the sender's latency plus the chunk over the slower of the two
// workers' links, each worker link carrying one transfer each way at a time; racks and graphs: a
// flow on the route between the two hosts, sharing links max-min fair). When its part of the
// collective is done a worker holds the new parameters and computes its next gradient.
//
// Ring (Patarasuk and Yuan 2009): the workers in worker order, worker i sending to i + 1 (mod N).
// The S-byte gradient is cut into N chunks (S / N bytes, the first S mod N one byte more); in step
// k < N - 1 (reduce-scatter) worker i sends chunk (i - k) mod N, in all-gather step k' worker i
// sends chunk (i + 1 - k') mod N. Worker i's step k + 1 send leaves when it has received step k's
// chunk from its predecessor and its own step k send has arrived; its step 0 send when its
// gradient is ready. So a straggler stalls the ring, step by step, as on real hardware; there is
// no barrier per step. After 2 (N - 1) steps sent and received a worker is done.
// Hierarchical (Jia et al. 2018): in each rack (cluster.network.topology "racks") the workers
// send their whole gradient to the rack's first worker, its leader; the leaders run the ring above
// among themselves (rack order) once their rack's gradients are in; each leader then sends the
// sum to its rack's workers, and is done.
//
// The math is BSP's with per-push application (ServerOptimizer::add, one version per gradient):
// when the first worker is done with an iteration's collective, every gradient of that iteration
// has been summed into it, and the iteration's gradients are applied one by one, in the order
// they became ready; equal times in the order BSP's server receives them (the worker applied last
// in the previous iteration first, then worker order, as BSP's release grants them). So on a free
// network (no latency, unbounded bandwidth) the trajectory is BSP's bit for bit: the same
// gradients on the same parameters, applied in the same order at the same times.
// Bytes: reduce-scatter steps and the sends to a leader count as pushes, all-gather steps and the
// leaders' broadcasts as pulls (bytes.push, bytes.pull).

#include <fmt/format.h>
#include <algorithm>
#include <stdexcept>
#include <utility>
#include <vector>

#include "sim/policies/allreduce.hpp"
#include "sim/worker/protocol.hpp"

namespace stalesim {

namespace {

class AllreduceProtocol final : public WorkerProtocol {
 public:
  explicit AllreduceProtocol(WorkerCore& c);
  void start() override;
  void on_params(Worker&) override { throw std::logic_error("all-reduce: no parameters are pulled"); }
  void on_compute_done(Worker& w) override;
  void on_push_applied(Worker&) override { throw std::logic_error("all-reduce: nothing is pushed"); }
  void on_message(const Event& e) override;

 private:
  enum class Kind : uint8_t { kRing, kGather, kBroadcast };
  struct Transfer {
    int32_t from = 0, to = 0;
    Kind kind = Kind::kRing;
  };
  // Per worker. Counts run over the whole run (a send's global index s is iteration s / M, step
  // s mod M, with M = 2 (ring size - 1)).
  struct State {
    int32_t ring_pos = -1;         // position in ring_; -1: a rack member that sends to its leader
    int32_t leader = -1;           // hierarchical members: the leader's worker id
    std::vector<int32_t> members;  // hierarchical leaders: their rack's other workers
    int64_t ready = 0;             // gradients computed
    int64_t done = 0;              // collectives finished
    int64_t sent = 0;              // ring sends started
    int64_t received = 0;          // ring chunks received
    bool sending = false;          // a ring send on its way
    int32_t gathered = 0;          // leaders: members' gradients in for the current iteration
  };

  // A transfer of `bytes` leaves `from` for `to` now; `push`: counted as a push, else as a pull.
  void send(int32_t from, int32_t to, int64_t bytes, Kind kind, bool push);
  int64_t chunk_bytes(int32_t pos, int64_t step) const;
  // A ring member moves on: finishes its iteration or sends its next step when it may.
  void progress(int32_t id);
  void finish(Worker& w);
  void apply_iteration();
  void begin_iteration(Worker& w);

  int64_t bytes_;              // S: the gradient on the wire
  std::vector<int32_t> ring_;  // worker ids in ring order
  int64_t steps_ = 0;          // M = 2 (ring size - 1)
  std::vector<State> st_;
  std::vector<Transfer> transfers_;  // by slot (an event's payload)
  std::vector<uint64_t> free_slots_;
  // The current iteration's ready gradients: (ready time, tie rank, worker).
  std::vector<std::pair<std::pair<SimTime, int64_t>, int32_t>> pending_;
  int64_t applied_ = 0;        // iterations applied
  int32_t last_applied_ = -1;  // the worker whose gradient was applied last
};

AllreduceProtocol::AllreduceProtocol(WorkerCore& c)
    : WorkerProtocol(c), bytes_(c.message_bytes()), st_(c.workers().size()) {
  const auto n = static_cast<int32_t>(c.workers().size());
  if (*c.policy().all_reduce() == AllReduce::kHierarchical) {
    // Racks (the loader requires them): a worker's rack is its host's; the leader its first worker.
    const Topology& t = c.network().topology();
    std::vector<std::pair<int32_t, int32_t>> by_rack;  // (rack, worker)
    for (int32_t w = 0; w < n; ++w) by_rack.emplace_back(t.rack_of(t.worker_host[static_cast<size_t>(w)]), w);
    std::sort(by_rack.begin(), by_rack.end());
    int32_t rack = -1, leader = -1;
    for (const auto& [r, w] : by_rack) {
      if (r != rack) {
        rack = r;
        leader = w;
        ring_.push_back(w);
      } else {
        st_[static_cast<size_t>(w)].leader = leader;
        st_[static_cast<size_t>(leader)].members.push_back(w);
      }
    }
  } else {
    for (int32_t w = 0; w < n; ++w) ring_.push_back(w);
  }
  for (size_t p = 0; p < ring_.size(); ++p)
    st_[static_cast<size_t>(ring_[p])].ring_pos = static_cast<int32_t>(p);
  steps_ = 2 * (static_cast<int64_t>(ring_.size()) - 1);
}

void AllreduceProtocol::start() {
  for (auto& w : c_.workers()) begin_iteration(w);
  c_.schedule_crashes();
}

// w holds the parameters of every gradient applied so far and computes its next gradient on them.
void AllreduceProtocol::begin_iteration(Worker& w) {
  w.params = c_.store().read();
  w.read_version = c_.store().version();
  w.seen_version = w.read_version;
  w.read_server_clock = c_.clocks().min_clock();
  w.read_staleness = 0;
  c_.set_state(w, WorkerState::kComputing);
  c_.schedule_compute(w);
}

void AllreduceProtocol::on_compute_done(Worker& w) {
  State& s = st_[static_cast<size_t>(w.id)];
  ++s.ready;
  pending_.push_back({{c_.engine().now(), w.id == last_applied_ ? -1 : w.id}, w.id});
  c_.set_state(w, WorkerState::kCommunicating, Activity::kPush);
  if (s.ring_pos < 0) return send(w.id, s.leader, bytes_, Kind::kGather, true);
  progress(w.id);
}

int64_t AllreduceProtocol::chunk_bytes(int32_t pos, int64_t step) const {
  const auto n = static_cast<int64_t>(ring_.size());
  const int64_t half = n - 1;
  const int64_t chunk = step < half ? ((pos - step) % n + n) % n : ((pos + 1 - (step - half)) % n + n) % n;
  return bytes_ / n + (chunk < bytes_ % n ? 1 : 0);
}

void AllreduceProtocol::progress(int32_t id) {
  State& s = st_[static_cast<size_t>(id)];
  const int64_t t = s.done;  // the iteration under way
  if (s.sending || s.ready <= t || s.gathered < static_cast<int32_t>(s.members.size())) return;
  if (s.sent == (t + 1) * steps_ && s.received >= (t + 1) * steps_)
    return finish(c_.worker(static_cast<size_t>(id)));
  const int64_t step = s.sent - t * steps_;
  if (step > 0 && s.received < s.sent) return;  // step - 1's chunk not yet in
  const auto size = static_cast<int32_t>(ring_.size());
  s.sending = true;
  ++s.sent;
  send(id, ring_[static_cast<size_t>((s.ring_pos + 1) % size)], chunk_bytes(s.ring_pos, step), Kind::kRing,
       /*push=*/step < size - 1);
}

void AllreduceProtocol::send(int32_t from, int32_t to, int64_t bytes, Kind kind, bool push) {
  if (push)
    c_.count_push(bytes);
  else
    c_.count_pull(bytes);
  uint64_t slot = transfers_.size();
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
    transfers_[slot] = {from, to, kind};
  } else {
    transfers_.push_back({from, to, kind});
  }
  c_.network().send_between(c_.engine(), from, c_.worker(static_cast<size_t>(from)).group, to,
                            c_.worker(static_cast<size_t>(to)).group, bytes, {kCollective, 0, slot});
}

void AllreduceProtocol::on_message(const Event& e) {
  const Transfer x = transfers_[e.payload];
  free_slots_.push_back(e.payload);
  State& to = st_[static_cast<size_t>(x.to)];
  switch (x.kind) {
    case Kind::kRing:
      st_[static_cast<size_t>(x.from)].sending = false;
      ++to.received;
      progress(x.from);
      if (!c_.stopped()) progress(x.to);
      return;
    case Kind::kGather:
      ++to.gathered;
      return progress(x.to);
    case Kind::kBroadcast:
      return finish(c_.worker(static_cast<size_t>(x.to)));
  }
}

// w's part of the collective is done: the iteration's gradients are applied (by the first worker
// done), w holds the new parameters and starts its next gradient; a leader sends them to its rack.
void AllreduceProtocol::finish(Worker& w) {
  State& s = st_[static_cast<size_t>(w.id)];
  if (applied_ == s.done) apply_iteration();
  if (c_.stopped()) return;
  ++s.done;
  s.gathered = 0;
  for (int32_t m : s.members) send(w.id, m, bytes_, Kind::kBroadcast, false);
  begin_iteration(w);
}

// Applies the iteration's gradients one by one in the order they became ready (see the header).
void AllreduceProtocol::apply_iteration() {
  ++applied_;
  std::sort(pending_.begin(), pending_.end());
  if (pending_.size() != st_.size())
    throw std::logic_error(fmt::format("all-reduce: {} of {} gradients ready", pending_.size(), st_.size()));
  const int32_t batch_size = c_.scenario().optimizer.batch_size;
  for (const auto& [key, id] : pending_) {
    Worker& w = c_.worker(static_cast<size_t>(id));
    GradientInfo info{w.id, w.read_version, c_.store().version(), w.read_staleness};
    double step = 0;
    if (!c_.math()) {
      step = c_.apply_to_server(w, {}, info, {});
    } else {
      const double loss = c_.compute_gradient(w, w.sampler->next(batch_size));
      if (!c_.check_loss(w, loss)) return;
      c_.count_loss(loss);
      step = c_.apply_to_server(w, c_.gradient_of(w), info, w.params);
    }
    w.params.reset();
    last_applied_ = id;
    c_.applied(w, info, step, /*wait_at_stop=*/false);
    if (c_.stopped()) return;
  }
  pending_.clear();
}

}  // namespace

std::unique_ptr<WorkerProtocol> make_allreduce_protocol(WorkerCore& c) {
  return std::make_unique<AllreduceProtocol>(c);
}

}  // namespace stalesim
