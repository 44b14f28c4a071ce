#pragma once
// The real mode's wire (sim/real/real_run.hpp): the messages between the server (rank 0) and the
// workers (ranks 1..N), one clock for all ranks, and the polling with sleeps. Internal to
// sim/real/; built only with MPI.
//
// Messages (MPI point to point, tag per direction; MPI keeps each pair's order):
//  - server -> worker (kTagParams): ParamsHeader + parameters. Pull modes: the grant of the
//    worker's next clock. Cache modes (lazy SSP, ESSP): a copy stamped with the server clock and
//    the worker's own pushes it includes; the server sends it when asked (lazy) or after every
//    rise of the server clock (ESSP's eager push). `stop`: the run is over.
//  - worker -> server (kTagPush): PushHeader + gradient. `bye` (cache modes): the worker's answer
//    to `stop`, its last message, so that the server has received every push before it ends.

#include <time.h>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
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

// Sleeps between polls while idle: 50 us, doubling to 200 us.
class Backoff {
 public:
  void reset() { ns_ = kMin; }
  void idle(int64_t at_most) {
    sleep_ns(std::min(ns_, std::max<int64_t>(at_most, 1000)));
    ns_ = std::min(ns_ * 2, kMax);
  }

 private:
  static constexpr int64_t kMin = 50'000;
  static constexpr int64_t kMax = 200'000;
  int64_t ns_ = kMin;
};

inline void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw std::runtime_error(
      fmt::format("MPI {} failed: {}", what, std::string(text, static_cast<size_t>(len))));
}

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

// Receives one message of `tag` from `source` (MPI_ANY_SOURCE: any) if one is there.
inline bool try_receive(int source, int tag, std::vector<char>& buf, int& from) {
  int flag = 0;
  MPI_Status st;
  check(MPI_Iprobe(source, tag, MPI_COMM_WORLD, &flag, &st), "Iprobe");
  if (!flag) return false;
  int bytes = 0;
  check(MPI_Get_count(&st, MPI_BYTE, &bytes), "Get_count");
  buf.resize(static_cast<size_t>(bytes));
  check(MPI_Recv(buf.data(), bytes, MPI_BYTE, st.MPI_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "Recv");
  from = st.MPI_SOURCE;
  return true;
}

// A worker's wait for the server's next message: polls with sleeps; throws when none came for
// `watchdog_s` (a dead server, or a server stuck on a dead peer) or on a signal, so that the
// worker ends instead of hanging (the caller ends the job).
inline void await_server(std::vector<char>& buf, double watchdog_s) {
  Backoff backoff;
  const auto start = Clock::now();
  int from = 0;
  while (!try_receive(0, kTagParams, buf, from)) {
    if (const int sig = g_signal.load())
      throw std::runtime_error(fmt::format("the worker received signal {}", sig));
    if (std::chrono::duration<double>(Clock::now() - start).count() > watchdog_s)
      throw std::runtime_error(fmt::format(
          "the server sent nothing for {:g} s (the watchdog, --watchdog-s): it died or hangs", watchdog_s));
    backoff.idle(1'000'000);
  }
}

}  // namespace stalesim::real
