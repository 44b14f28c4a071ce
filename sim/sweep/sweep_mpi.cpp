#include "sim/sweep/sweep_mpi.hpp"

#include <limits>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "sim/output/outputs.hpp"

#ifdef STALESIM_HAVE_MPI
#include <mpi.h>
#endif

namespace stalesim {

bool prepare_on_rank0(const MpiSession* mpi, const std::function<void()>& prepare,
                      const std::function<void(const std::exception&)>& report) {
  const int rank = mpi ? mpi->rank() : 0;
  std::exception_ptr error;
  int refused = 0;
  if (rank == 0) {
    try {
      prepare();
    } catch (const ScenarioError&) {
      error = std::current_exception();
      refused = 1;
    } catch (const IoError&) {
      error = std::current_exception();
      refused = 1;
    }
  }
  if (mpi) refused = mpi->broadcast(refused);
  if (!refused) return true;
  if (!mpi) std::rethrow_exception(error);
  if (rank == 0) {
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      report(e);
    }
  }
  mpi->broadcast(refused);  // every rank waits until rank 0 has reported
  return false;
}

void gather_records(const MpiSession* mpi, std::vector<RunRecord>& records) {
  if (!mpi || mpi->size() < 2) return;
  const auto ranks = static_cast<size_t>(mpi->size());
  nlohmann::json mine = nlohmann::json::array();
  for (size_t j = 0; j < records.size(); ++j)
    if (static_cast<int>(j % ranks) == mpi->rank()) mine.push_back({j, to_json(records[j])});
  for (const auto& text : mpi->gather(mine.dump()))
    for (const auto& item : nlohmann::json::parse(text))
      records.at(item[0].get<size_t>()) = run_record_from_json(item[1]);
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
