// tests/common/sim_range.h — a simulated range outside any pool, for the
// simulator's and the models' unit tests: an anonymous mapping attached to
// the crash simulator directly under a persistency model.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "ferrite/crash/model.h"
#include "ferrite/crash/sim.h"
#include "ferrite/persist/persist.h"

namespace ferrite::test {

class SimRange {
 public:
  explicit SimRange(std::string_view model = "abstract", std::size_t size = 64 * 1024) : size_(size) {
    crash::enable_sim();
    crash::sim::set_model(model);
    base_ = static_cast<std::uint8_t*>(::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    saved_ = persist::installed();
    persist::install(persist::sim_attach(base_, size));
  }
  ~SimRange() {
    crash::sim::set_crash_hook(nullptr, nullptr);
    persist::sim_detach(base_);
    persist::install(saved_);
    ::munmap(base_, size_);
    crash::sim::set_model("abstract");
  }
  SimRange(const SimRange&) = delete;
  SimRange& operator=(const SimRange&) = delete;

  std::uint8_t* line(std::size_t i) { return base_ + 64 * i; }
  static std::uint64_t word(const crash::Line& l, int w = 0) {
    std::uint64_t v;
    std::memcpy(&v, l.data() + 8 * w, 8);
    return v;
  }
  void store(std::size_t line_index, std::uint64_t v, int w = 0) { std::memcpy(line(line_index) + 8 * w, &v, 8); }
  std::uint64_t load(std::size_t line_index, int w = 0) {
    std::uint64_t v;
    std::memcpy(&v, line(line_index) + 8 * w, 8);
    return v;
  }
  // Value of word w of line i in an image.
  std::uint64_t in_image(const crash::CrashState& cs, const crash::Image& img, std::size_t i, int w = 0) {
    for (std::size_t j = 0; j < cs.lines.size(); ++j)
      if (cs.lines[j] == 64 * i) return word(img.lines[j], w);
    return load(i, w);  // untouched line: working == media
  }

  std::uint8_t* base_;
  std::size_t size_;
  const persist::Backend* saved_;
};

}  // namespace ferrite::test
