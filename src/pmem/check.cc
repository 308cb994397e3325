// src/pmem/check.cc — check_pool: validates a pool file without mapping it
// at its base (for `ferrite check` and `ferrite info`).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "internal.h"

namespace ferrite::pmem {

namespace L = layout;
using detail::fail;

CheckReport check_pool(const std::string& path) {
  CheckReport rep;
  int fd = -1;
  try {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      const int e = errno;
      if (e == ENOENT) fail(Errc::kNotFound, path, "no such file");
      fail(Errc::kUnreadable, path, std::string("cannot open: ") + std::strerror(e));
    }
    detail::FileState fs = detail::load_and_validate(fd, path);
    const L::HeaderSlot& h = fs.hdr;
    rep.format_version = h.format_version;
    rep.size = h.pool_size;
    rep.base = h.base;
    rep.generation = h.generation;
    rep.uuid = detail::uuid_text(h.uuid);
    rep.header_slot = fs.slot;
    rep.other_slot_valid = fs.other_valid;
    rep.header = fs.health;
    rep.media = detail::probe_media(fd);
    for (const auto& r : h.roots) {
      if (!r.in_use) continue;
      rep.roots.push_back(RootInfo{r.name, r.offset, r.type_tag, r.type_version, r.size});
      rep.root_type_names.emplace_back(r.type_name);
    }
    const auto orphan = detail::orphan_tails(fs.map);
    rep.chunks_total = h.chunk_count;
    for (std::size_t i = 0; i < fs.map.size(); ++i)
      rep.chunks_used += (fs.map[i] != L::kChunkFree && !orphan[i]) ? 1 : 0;
    rep.ok = true;
  } catch (const PoolError& e) {
    rep.ok = false;
    rep.error = e.code();
    rep.message = e.what();
  } catch (const std::exception& e) {
    rep.ok = false;
    rep.error = Errc::kUnreadable;
    rep.message = "pool " + path + ": " + e.what();
  }
  if (fd >= 0) ::close(fd);
  return rep;
}

}  // namespace ferrite::pmem
