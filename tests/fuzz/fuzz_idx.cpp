// libFuzzer harness: the IDX reader (plain or gzip), issue 10. Any input must either parse into an
// array whose payload matches its dimensions or throw DataError. Run through tools/fuzz.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "models/dataset.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const stalesim::IdxArray a = stalesim::parse_idx(std::span<const uint8_t>(data, size), "fuzz.idx");
    uint64_t n = 1;
    for (int64_t d : a.dims) {
      if (d < 0) std::abort();
      n *= static_cast<uint64_t>(d);
    }
    if (a.dims.empty() || n != a.data.size()) std::abort();
  } catch (const stalesim::DataError&) {
  }
  return 0;
}
