// src/pmem/errors.cc — names of error codes and media, and the one way the
// pool reports a refusal (PoolError naming the file and the reason).
#include <cstdio>

#include "internal.h"

namespace ferrite::pmem {

std::string_view errc_name(Errc e) {
  switch (e) {
    case Errc::kNotFound: return "not-found";
    case Errc::kUnreadable: return "unreadable";
    case Errc::kExists: return "exists";
    case Errc::kBadMagic: return "bad-magic";
    case Errc::kBadVersion: return "bad-version";
    case Errc::kTruncated: return "truncated";
    case Errc::kChecksum: return "checksum";
    case Errc::kCorrupt: return "corrupt";
    case Errc::kUnknownRoot: return "unknown-root";
    case Errc::kRootType: return "root-type";
    case Errc::kRootTableFull: return "root-table-full";
    case Errc::kBaseUnavailable: return "base-unavailable";
    case Errc::kLocked: return "locked";
    case Errc::kFull: return "full";
    case Errc::kInvalidArgument: return "invalid-argument";
    case Errc::kBackendConflict: return "backend-conflict";
    case Errc::kNoSpace: return "no-space";
  }
  return "?";
}

std::string_view media_name(Media m) {
  switch (m) {
    case Media::kDax: return "dax";
    case Media::kTmpfs: return "tmpfs";
    case Media::kFile: return "file";
  }
  return "?";
}

namespace detail {

void fail(Errc code, const std::string& path, const std::string& why) {
  throw PoolError(code, "pool " + path + ": " + why + " [" + std::string(errc_name(code)) + "]");
}

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace detail

}  // namespace ferrite::pmem
