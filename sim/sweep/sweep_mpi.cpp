#include "sim/sweep/sweep_mpi.hpp"

#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string_view>

#ifdef STALESIM_HAVE_MPI
#include <mpi.h>
#endif

namespace stalesim {

int mpi_launch_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) {
    const char* v = std::getenv(name);
    if (v && *v) {
      const int n = std::atoi(v);
      return n > 0 ? n : 0;
    }
  }
  return 0;
}

#ifdef STALESIM_HAVE_MPI

bool mpi_built() { return true; }

MpiSession::MpiSession() {
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiSession::~MpiSession() { MPI_Finalize(); }

int MpiSession::broadcast(int value) const {
  MPI_Bcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return value;
}

std::vector<std::string> MpiSession::gather(const std::string& text) const {
  if (text.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    throw std::length_error("MPI gather: a rank's records exceed 2 GiB");
  int length = static_cast<int>(text.size());
  std::vector<int> lengths(rank_ == 0 ? static_cast<size_t>(size_) : 0);
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<int> offsets(lengths.size());
  std::string all;
  if (rank_ == 0) {
    long long total = 0;
    for (size_t r = 0; r < lengths.size(); ++r) {
      offsets[r] = static_cast<int>(total);
      total += lengths[r];
      if (total > std::numeric_limits<int>::max())
        throw std::length_error("MPI gather: the records of all ranks exceed 2 GiB");
    }
    all.resize(static_cast<size_t>(total));
  }
  MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0,
              MPI_COMM_WORLD);
  std::vector<std::string> out;
  for (size_t r = 0; r < lengths.size(); ++r)
    out.push_back(all.substr(static_cast<size_t>(offsets[r]), static_cast<size_t>(lengths[r])));
  return out;
}

void MpiSession::abort(int code) const { MPI_Abort(MPI_COMM_WORLD, code); }

#else

bool mpi_built() { return false; }

MpiSession::MpiSession() = default;
MpiSession::~MpiSession() = default;
int MpiSession::broadcast(int value) const { return value; }
std::vector<std::string> MpiSession::gather(const std::string& text) const { return {text}; }
void MpiSession::abort(int) const {}

#endif

}  // namespace stalesim
