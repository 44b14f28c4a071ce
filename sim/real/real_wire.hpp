#pragma once
// The real mode's wire (sim/real/real_run.hpp): the messages between the server shards (ranks
// 0..S-1; rank 0 also runs the policy) and the workers (ranks S..S+N-1), one clock for all ranks,
// and the polling with sleeps. Internal to sim/real/; built only with MPI.
//
// Messages (MPI point to point, tag per direction; MPI keeps each pair's order). Every message of
// parameters or of a gradient travels in S parts, one per shard: shard k's slice (shard_slice).
//  - server -> worker (kTagParams): ParamsHeader + parameters. Pull modes: the grant of the
//    worker's next clock. Cache modes (lazy SSP, ESSP): a copy stamped with the server clock and
//    the worker's own pushes it includes; the server sends it when asked (lazy) or after every
//    rise of the server clock (ESSP's eager push). `stop`: the run is over. Rank 0 sends the
//    header that counts and slice 0; each shard rank k its slice, on rank 0's order, with a
//    header whose other fields are rank 0's. The worker takes rank 0's part, then each shard's.
//  - worker -> server (kTagPush): PushHeader + gradient. `bye` (cache modes): the worker's answer
//    to `stop`, its last message, so that the server has received every push before it ends.
//    The slices for shards 1..S-1 go first (their ranks always take pushes in), slice 0 with the
//    header that counts last: when rank 0 has a push, every shard's slice of it was sent.
//  - rank 0 -> shard rank (kTagOrder): ShardOrder, what the shard does, in the order rank 0's
//    policy decided it (send its slice to a worker, apply a worker's oldest slice with the
//    server's GradientInfo, send its slice to rank 0, stop). A shard's slice changes only on
//    rank 0's orders, so at each order it holds exactly rank 0's version.
//  - shard rank -> rank 0 (kTagGather): its slice, for an evaluation or the final parameters.

#include <sys/prctl.h>
#include <time.h>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <mpi.h>

namespace stalesim::real {

using Clock = std::chrono::steady_clock;
constexpr int kTagParams = 1;
constexpr int kTagPush = 2;
constexpr int kTagOrder = 3;
constexpr int kTagGather = 4;
constexpr int kExitFailed = 3;
constexpr int kExitInterrupted = 130;

// Server -> worker: parameters (count floats follow), or the end of the run.
struct ParamsHeader {
  int64_t stop = 0;
  int64_t deliver_at_ns = 0;  // emulated: the worker uses them no earlier (0: at once)
  int64_t version = 0;
  int64_t count = 0;
  int64_t clock = 0;     // cache modes: the server clock the copy is stamped with
  int64_t included = 0;  // cache modes: the worker's own pushes the copy includes
};

// Worker -> server: a gradient (count floats follow) and how its iteration went.
struct PushHeader {
  int64_t iteration = 0;
  int64_t sent_at_ns = 0;    // when it left the worker (emulated: when its link started sending)
  int64_t params_at_ns = 0;  // when the iteration began (the parameters were there, after any emulated delay)
  int64_t compute_ns = 0;    // the real gradient
  int64_t padding_ns = 0;    // emulated: the profile's time minus compute_ns (0 when slower)
  int64_t count = 0;
  double loss = 0;
  // Cache modes: what the gradient read (the copy's version and the clock gap), the time the
  // worker waited for a fresh enough copy before it, and whether a fetch rides on it (lazy SSP).
  int64_t read_version = 0;
  int64_t read_staleness = 0;
  int64_t wait_ns = 0;
  int64_t fetch = 0;
  int64_t bye = 0;
};

// Rank 0 -> a shard rank: one order (count is 0: no floats follow).
struct ShardOrder {
  enum Kind : int64_t { kParams = 1, kApply = 2, kGather = 3, kStop = 4 };
  int64_t kind = 0;
  int64_t worker = 0;
  int64_t count = 0;
  ParamsHeader params;  // kParams: the header of the worker's message (the shard's slice follows it)
  // kApply: the server's GradientInfo for the worker's oldest push not yet applied.
  int64_t version_read = 0;
  int64_t version_apply = 0;
  int64_t staleness = 0;
};

// Shard k's slice of `count` parameters: the simulator's split of a message across the shards
// (sim/worker/network.cpp splits the bytes evenly, the first shards taking the remainder), in
// floats.
struct Slice {
  int64_t begin = 0;
  int64_t count = 0;
};
inline Slice shard_slice(int64_t count, int32_t shards, int32_t k) {
  const int64_t base = count / shards;
  const int64_t extra = count % shards;
  return {k * base + std::min<int64_t>(k, extra), base + (k < extra ? 1 : 0)};
}

// Who is where: ranks 0..shards-1 the server shards, then the workers; `params` floats in all.
struct Layout {
  int32_t shards = 1;
  int64_t params = 0;
  int worker_rank(int32_t w) const { return shards + w; }
  int32_t worker_of(int rank) const { return rank - shards; }
  Slice slice(int32_t k) const { return shard_slice(params, shards, k); }
};

// The signal rank 0 (or a worker) received, 0 for none; set by the handlers in real_run.cpp.
inline std::atomic<int> g_signal{0};

inline int64_t since(Clock::time_point epoch) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - epoch).count();
}

inline void sleep_ns(int64_t ns) {
  if (ns <= 0) return;
  timespec t{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
  while (::nanosleep(&t, &t) != 0 && errno == EINTR && g_signal.load() == 0) {
  }
}

// Sleeps between polls while idle: 20 us, doubling to 80 us (precise_sleeps makes them so). Each
// poll costs a few microseconds of CPU; a longer sleep adds its length to every message a rank
// notices late: with 50 to 200 us and Linux's default 50 us timer slack (sleeps of 120 to 290 us
// here) the probe's one-way latency was 461 us, against 166 us with these.
class Backoff {
 public:
  void reset() { ns_ = kMin; }
  void idle(int64_t at_most) {
    sleep_ns(std::min(ns_, std::max<int64_t>(at_most, 1000)));
    ns_ = std::min(ns_ * 2, kMax);
  }

 private:
  static constexpr int64_t kMin = 20'000;
  static constexpr int64_t kMax = 80'000;
  int64_t ns_ = kMin;
};

// Lets this thread's sleeps end when asked (a 1 us timer slack instead of Linux's default 50 us,
// which a nanosleep of 1 us turned into 72 us here): every rank calls it before its first message.
inline void precise_sleeps() { ::prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL); }

inline void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw std::runtime_error(
      fmt::format("MPI {} failed: {}", what, std::string(text, static_cast<size_t>(len))));
}

// Waits for a send or receive in flight by polling MPI_Test with the same sleeps as between
// messages, never in a blocking MPI call: OpenMPI's blocking calls spin on a core for as long as
// the transfer lasts (a 400 KB message at 1 Gbit/s: over 3 ms), and the ranks share the host's
// cores, so a spinning server or worker took CPU time from the workers' gradients (the server
// rank used 0.58 of a core in an ASP run; a message's own time did not change measurably). The
// kernel moves the bytes meanwhile; each poll lets MPI take what arrived and hand out what may go.
inline void complete(MPI_Request& request, const char* what) {
  Backoff backoff;
  for (;;) {
    int done = 0;
    check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what);
    if (done) return;
    backoff.idle(1'000'000);
  }
}

// Sends to one rank that may still be in flight (MPI_Isend), oldest first, each holding its bytes
// until MPI says the send is complete. The server's and a shard's sends to each worker.
class SendQueue {
 public:
  // Lets go of the completed sends, then sends `message` to `rank` with `tag`.
  void post(int rank, int tag, std::vector<char> message) {
    while (!q_.empty()) {
      int done = 0;
      check(MPI_Test(&q_.front().request, &done, MPI_STATUS_IGNORE), "Test");
      if (!done) break;
      q_.pop_front();
    }
    Outgoing& o = q_.emplace_back();
    o.bytes = std::move(message);
    check(MPI_Isend(o.bytes.data(), static_cast<int>(o.bytes.size()), MPI_BYTE, rank, tag, MPI_COMM_WORLD,
                    &o.request),
          "Isend");
  }
  // Waits until every send is complete.
  void wait_all() {
    for (auto& o : q_) complete(o.request, "Test (send)");
  }

 private:
  struct Outgoing {
    std::vector<char> bytes;
    MPI_Request request = MPI_REQUEST_NULL;
  };
  std::deque<Outgoing> q_;
};

template <class Header>
std::vector<char> pack(const Header& h, std::span<const float> values) {
  std::vector<char> buf(sizeof(Header) + values.size_bytes());
  std::memcpy(buf.data(), &h, sizeof(Header));
  if (!values.empty()) std::memcpy(buf.data() + sizeof(Header), values.data(), values.size_bytes());
  return buf;
}

template <class Header>
Header unpack(const std::vector<char>& buf, std::vector<float>& values) {
  Header h;
  if (buf.size() < sizeof(Header)) throw std::runtime_error("a real-mode message shorter than its header");
  std::memcpy(&h, buf.data(), sizeof(Header));
  if (h.count < 0 || buf.size() != sizeof(Header) + static_cast<size_t>(h.count) * sizeof(float))
    throw std::runtime_error("a real-mode message whose size does not match its header");
  values.resize(static_cast<size_t>(h.count));
  if (h.count) std::memcpy(values.data(), buf.data() + sizeof(Header), values.size() * sizeof(float));
  return h;
}

// Sends `bytes` to `rank` with `tag` and returns once MPI has them out of the buffer (complete).
inline void send_polling(std::span<const char> bytes, int rank, int tag) {
  MPI_Request request = MPI_REQUEST_NULL;
  check(
      MPI_Isend(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, rank, tag, MPI_COMM_WORLD, &request),
      "Isend");
  complete(request, "Test (send)");
}

// Posts the receive of the next message of `tag` from `source` (MPI_ANY_SOURCE: any) into `buf`,
// sized to it, if its first bytes are in: false if none is; else `request` is the receive in
// flight and `from` its rank.
inline bool post_receive(int source, int tag, std::vector<char>& buf, MPI_Request& request, int& from) {
  int flag = 0;
  MPI_Status st;
  check(MPI_Iprobe(source, tag, MPI_COMM_WORLD, &flag, &st), "Iprobe");
  if (!flag) return false;
  int bytes = 0;
  check(MPI_Get_count(&st, MPI_BYTE, &bytes), "Get_count");
  buf.resize(static_cast<size_t>(bytes));
  check(MPI_Irecv(buf.data(), bytes, MPI_BYTE, st.MPI_SOURCE, tag, MPI_COMM_WORLD, &request), "Irecv");
  from = st.MPI_SOURCE;
  return true;
}

// Receives one message of `tag` from `source` (MPI_ANY_SOURCE: any) if one is there (complete).
inline bool try_receive(int source, int tag, std::vector<char>& buf, int& from) {
  MPI_Request request = MPI_REQUEST_NULL;
  if (!post_receive(source, tag, buf, request, from)) return false;
  complete(request, "Test (receive)");
  return true;
}

// Receives the messages of one tag from every rank at once: each message whose first bytes are
// in (MPI_Iprobe) gets its MPI_Irecv at the next poll, and its bytes then come in while the rank
// does other work and polls (MPI_Test). The server ranks take pushes so, as a parameter server
// reads all its connections: a receive completed one message at a time held every other
// worker's push back (OpenMPI sends a message over 64 KB only once its receive is posted), so
// two pushes that met at the server crossed it one after the other even on a server link with
// room for both (issue 42: pushes overlapping another took 6.6 ms on a 2 Gbit/s server link, a
// lone one 3.4 ms). Messages from one rank come out in the order it sent them.
//
// A receive is posted only for a message that has arrived, so every one posted completes: a rank
// that ends normally calls drain(). One that fails goes on to MPI_Abort with receives in flight,
// so their buffers, which MPI may still write, are kept to the end of the process.
class Inbox {
 public:
  explicit Inbox(int tag) : tag_(tag) {}
  Inbox(const Inbox&) = delete;
  Inbox& operator=(const Inbox&) = delete;
  ~Inbox() {
    static std::vector<std::vector<char>> kept;  // reachable to the end: not a leak, not freed under MPI
    for (auto& in : q_)
      if (!in.done) kept.push_back(std::move(in.bytes));
  }

  // One whole message, if one is in (the oldest of its rank's): its bytes into `buf`, its rank
  // into `from`.
  bool next(std::vector<char>& buf, int& from) {
    post_arrived();
    for (auto& in : q_)
      if (!in.done) check(MPI_Test(&in.request, &in.done, MPI_STATUS_IGNORE), "Test (receive)");
    for (auto it = q_.begin(); it != q_.end(); ++it) {
      if (!it->done) continue;
      const int rank = it->from;
      if (std::any_of(q_.begin(), it, [rank](const Incoming& e) { return e.from == rank; })) continue;
      buf.swap(it->bytes);
      from = rank;
      q_.erase(it);
      return true;
    }
    return false;
  }
  // Waits until every receive posted is complete (their messages stay to be taken by next).
  void drain() {
    for (auto& in : q_)
      if (!in.done) {
        complete(in.request, "Test (receive)");
        in.done = 1;
      }
  }

 private:
  void post_arrived() {
    for (;;) {
      Incoming& in = q_.emplace_back();
      if (post_receive(MPI_ANY_SOURCE, tag_, in.bytes, in.request, in.from)) continue;
      q_.pop_back();
      return;
    }
  }

  struct Incoming {
    int from = 0;
    std::vector<char> bytes;
    MPI_Request request = MPI_REQUEST_NULL;
    int done = 0;
  };
  int tag_;
  std::deque<Incoming> q_;  // oldest first (each buffer, where MPI writes, stays put as entries move)
};

// A rank silent for longer than the watchdog (await_rank).
struct SilentRank : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A wait for the next message of `tag` from rank `source`: polls with sleeps; throws when none
// came for `watchdog_s` (a dead rank, or one stuck on a dead peer) or on a signal, so that the
// waiting rank ends instead of hanging (the caller ends the job). `who` names the source.
inline void await_rank(int source, int tag, std::vector<char>& buf, double watchdog_s,
                       const std::string& who) {
  Backoff backoff;
  const auto start = Clock::now();
  int from = 0;
  while (!try_receive(source, tag, buf, from)) {
    if (const int sig = g_signal.load()) throw std::runtime_error(fmt::format("received signal {}", sig));
    if (std::chrono::duration<double>(Clock::now() - start).count() > watchdog_s)
      throw SilentRank(fmt::format(
          "{} sent nothing for {:g} s (the watchdog, --watchdog-s): it died or hangs", who, watchdog_s));
    backoff.idle(1'000'000);
  }
}

// A worker's wait for the server's next message (rank 0's part).
inline void await_server(std::vector<char>& buf, double watchdog_s) {
  await_rank(0, kTagParams, buf, watchdog_s, "the server");
}

// A worker's message of parameters whose rank-0 part (`part`: slice 0) is in: the other shards'
// parts, each from its rank, assembled into `values` (all the parameters). A silent shard is rank
// 0's to judge (its watchdog on this worker, then a gather from every shard: RealServer), so that
// rank 0 writes what it measured before the job ends; the worker's own limit here, 3 x
// watchdog_s, is only a backstop.
inline void receive_slices(const Layout& l, std::vector<float>& part, std::vector<float>& values,
                           double watchdog_s) {
  if (l.shards == 1) return values.swap(part);
  values.resize(static_cast<size_t>(l.params));
  std::vector<char> buf;
  for (int32_t k = 0; k < l.shards; ++k) {
    if (k > 0) {
      await_rank(k, kTagParams, buf, 3 * watchdog_s, fmt::format("server shard {} (rank {})", k, k));
      unpack<ParamsHeader>(buf, part);
    }
    const Slice s = l.slice(k);
    if (static_cast<int64_t>(part.size()) != s.count)
      throw std::runtime_error(
          fmt::format("server shard {} sent {} parameters, its slice has {}", k, part.size(), s.count));
    std::copy(part.begin(), part.end(), values.begin() + s.begin);
  }
}

// A worker's push: the gradient's slices to shards 1..S-1 (a header with the iteration and the
// count), then `p` with slice 0 to rank 0.
inline void send_push(const Layout& l, PushHeader p, std::span<const float> grad) {
  for (int32_t k = l.shards - 1; k >= 0; --k) {
    const Slice s = l.slice(k);
    PushHeader h;
    if (k == 0) h = p;
    h.iteration = p.iteration;
    h.count = s.count;
    send_polling(pack(h, grad.subspan(static_cast<size_t>(s.begin), static_cast<size_t>(s.count))), k,
                 kTagPush);
  }
}

}  // namespace stalesim::real
