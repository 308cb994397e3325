// tests/common/pool_image.h — a pool file as bytes: read it, damage it,
// write it back (header slots with their checksum recomputed).
#pragma once

#include <cstddef>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ferrite/pmem/layout.h"

namespace ferrite::test {

inline std::vector<char> read_file(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(f), {});
}
inline void write_file(const std::string& p, const std::vector<char>& d) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(d.data(), static_cast<std::streamsize>(d.size()));
}

// Header slot s of a file image; reseal() recomputes its checksum.
inline pmem::layout::HeaderSlot* slot_of(std::vector<char>& img, int s) {
  return reinterpret_cast<pmem::layout::HeaderSlot*>(img.data() + pmem::layout::kSlotOffset[s]);
}
inline void reseal(pmem::layout::HeaderSlot* h) {
  h->checksum = pmem::layout::fnv1a64(reinterpret_cast<const unsigned char*>(h),
                                      offsetof(pmem::layout::HeaderSlot, checksum));
}

}  // namespace ferrite::test
