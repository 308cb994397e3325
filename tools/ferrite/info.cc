// `ferrite info POOL [--json] [--no-stats]` — describe a pool file
// (read-only: the header by pread; the per-root statistics from the deep
// check's private mapping, in a child), and `ferrite create-pool POOL --size
// 64M` — make an empty pool.
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "ferrite/cli.h"
#include "ferrite/pmem/layout.h"
#include "ferrite/pmem/pool.h"
#include "pool_header.h"

namespace {

namespace fp = ferrite::pmem;

std::string hex(std::uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

void setup_info(CLI::App* sub) {
  struct Opts {
    std::string path;
    bool json = false, no_stats = false;
  };
  auto o = std::make_shared<Opts>();
  sub->add_option("pool", o->path, "Pool file")->required();
  sub->add_flag("--json", o->json, "Machine-readable output");
  sub->add_flag("--no-stats", o->no_stats,
                "Header only: skip the per-root statistics (they run every root's recovery hook on a private "
                "mapping, in a child)");
  sub->callback([o] {
    const fp::CheckReport r = fp::check_pool(o->path, /*deep=*/!o->no_stats);
    // Per root name: its use, or why there is none (damaged, unknown type).
    auto use_of = [&](const std::string& name) -> const fp::RootUse* {
      for (const auto& u : r.root_use)
        if (u.name == name) return &u;
      return nullptr;
    };
    auto damage_of = [&](const std::string& name) -> std::string {
      for (const auto& d : r.damaged_roots)
        if (d.rfind(name + ": ", 0) == 0) return d.substr(name.size() + 2);
      return "";
    };
    if (!r.ok) {
      std::fprintf(stderr, "%s\n", r.message.c_str());
      throw ferrite::cli::Exit{1};
    }
    if (o->json) {
      nlohmann::json j;
      j["path"] = o->path;
      j["format_version"] = r.format_version;
      j["size"] = r.size;
      j["base"] = hex(r.base);
      j["media"] = std::string(fp::media_name(r.media));
      j["uuid"] = r.uuid;
      j["generation"] = r.generation;
      j["header_slot"] = r.header_slot;
      j["header"] = ferrite::cli::header_json(r.header);
      j["chunk_size"] = fp::layout::kChunkSize;
      j["chunks_total"] = r.chunks_total;
      j["chunks_used"] = r.chunks_used;
      j["roots"] = nlohmann::json::array();
      for (std::size_t i = 0; i < r.roots.size(); ++i) {
        const auto& x = r.roots[i];
        nlohmann::json e = {{"name", x.name},
                            {"type", r.root_type_names[i]},
                            {"tag", hex(x.type_tag)},
                            {"version", x.type_version},
                            {"offset", hex(x.offset)},
                            {"size", x.size}};
        if (const auto* u = use_of(x.name)) {
          e["blocks"] = u->blocks;
          e["bytes"] = u->bytes;
        }
        if (const std::string d = damage_of(x.name); !d.empty()) e["damaged"] = d;
        j["roots"].push_back(e);
      }
      j["stats"] = r.deep_ran ? "ran" : o->no_stats ? "skipped (--no-stats)" : "not available: " + r.deep_skipped;
      std::cout << j.dump(2) << "\n";
      return;
    }
    std::cout << "pool        " << o->path << "\n"
              << "format      " << r.format_version << "\n"
              << "size        " << r.size << " bytes (" << (r.size >> 20) << " MiB)\n"
              << "base        " << hex(r.base) << "\n"
              << "media       " << fp::media_name(r.media) << "\n"
              << "uuid        " << r.uuid << "\n"
              << "generation  " << r.generation << " (header slot " << r.header_slot << ")\n"
              << "header      " << fp::header_state_name(r.header.state)
              << (r.header.message.empty() ? std::string(": both slots agree") : ": " + r.header.message) << "\n"
              << "heap        " << r.chunks_used << " of " << r.chunks_total << " chunks of "
              << (fp::layout::kChunkSize >> 10) << " KiB in use\n"
              << "roots       " << r.roots.size() << "\n";
    for (std::size_t i = 0; i < r.roots.size(); ++i) {
      const auto& x = r.roots[i];
      std::cout << "  " << std::left << std::setw(24) << x.name << " type "
                << (r.root_type_names[i].empty() ? "?" : r.root_type_names[i]) << " tag " << hex(x.type_tag)
                << " v" << x.type_version << ", " << x.size << " bytes at +" << hex(x.offset);
      if (const auto* u = use_of(x.name))
        std::cout << "; holds " << u->blocks << " blocks, " << u->bytes << " bytes";
      else if (const std::string d = damage_of(x.name); !d.empty())
        std::cout << "; damaged: " << d;
      std::cout << "\n";
    }
    if (!o->no_stats && !r.deep_ran)
      std::cout << "stats       not available: " << r.deep_skipped << "\n";
  });
}

// "64M", "1G", "1048576", "512K".
bool parse_size(const std::string& s, std::size_t* out) {
  if (s.empty()) return false;
  std::size_t pos = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(s, &pos);
  } catch (...) {
    return false;
  }
  std::string suf = s.substr(pos);
  unsigned shift = 0;
  if (suf == "K" || suf == "k" || suf == "KiB") shift = 10;
  else if (suf == "M" || suf == "m" || suf == "MiB") shift = 20;
  else if (suf == "G" || suf == "g" || suf == "GiB") shift = 30;
  else if (!suf.empty()) return false;
  if (shift && v > (~0ull >> shift)) return false;
  *out = static_cast<std::size_t>(v << shift);
  return true;
}

void setup_create(CLI::App* sub) {
  struct Opts {
    std::string path, size = "64M", base;
  };
  auto o = std::make_shared<Opts>();
  sub->add_option("pool", o->path, "Pool file to create")->required();
  sub->add_option("--size", o->size, "Size, e.g. 64M, 1G (multiple of 4 KiB, >= 1M)");
  sub->add_option("--base", o->base, "Base address (hex); default: a random free position of Ferrite's address-space plan");
  sub->callback([o] {
    std::size_t size = 0;
    if (!parse_size(o->size, &size)) {
      std::fprintf(stderr,
                   "ferrite create-pool: bad --size '%s': give bytes, or a number with K, M or G (powers of "
                   "1024), e.g. 64M or 1G; a pool is 1 MiB to %zu GiB, a multiple of 4 KiB\n",
                   o->size.c_str(), static_cast<std::size_t>(fp::kMaxPoolSize >> 30));
      throw ferrite::cli::Exit{2};
    }
    fp::PoolOptions opts;
    if (!o->base.empty()) {
      try {
        opts.base = std::stoull(o->base, nullptr, 16);
      } catch (...) {
        std::fprintf(stderr, "ferrite create-pool: bad --base '%s'\n", o->base.c_str());
        throw ferrite::cli::Exit{2};
      }
    }
    try {
      auto pool = fp::Pool::create(o->path, size, opts);
      std::cout << o->path << ": created, " << size << " bytes at " << hex(reinterpret_cast<std::uintptr_t>(pool->base()))
                << ", uuid " << pool->uuid() << "\n";
    } catch (const fp::PoolError& e) {
      std::fprintf(stderr, "%s\n", e.what());
      throw ferrite::cli::Exit{e.code() == fp::Errc::kInvalidArgument ? 2 : 1};
    }
  });
}

}  // namespace

FERRITE_REGISTER_COMMAND(info, "Describe a pool file", setup_info);
FERRITE_REGISTER_COMMAND(create-pool, "Create an empty pool file", setup_create);
