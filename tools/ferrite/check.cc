// `ferrite check POOL [--json] [--repair]` — validate a pool file without
// opening it (header slots, checksums, version, size, root table, chunk
// map); --repair rewrites a damaged or stale header slot from its twin.
// Exit codes: 0 sound, 1 not sound (one line on stderr says why: a refusal,
// or a damaged header slot that open would repair or fall back from), 2 usage.
#include <cstdio>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "ferrite/cli.h"
#include "ferrite/pmem/pool.h"
#include "pool_header.h"

namespace {

namespace fp = ferrite::pmem;

void setup_check(CLI::App* sub) {
  struct Opts {
    std::string path;
    bool json = false;
    bool repair = false;
    bool shallow = false;
  };
  auto o = std::make_shared<Opts>();
  sub->add_option("pool", o->path, "Pool file")->required();
  sub->add_flag("--json", o->json, "Machine-readable output");
  sub->add_flag("--shallow", o->shallow,
                "Only the file: header slots, root table, chunk map (default: also every structure, through its "
                "recovery hook, on a private mapping — nothing is written)");
  sub->add_flag("--repair", o->repair,
                "Repair a damaged or stale header slot from its twin (what any open does), then check again");
  sub->callback([o] {
    fp::CheckReport r = fp::check_pool(o->path, !o->shallow);
    std::string repaired;
    if (o->repair && r.ok && r.header.state != fp::HeaderState::kInSync) {
      // Opening heals the header (pool.cc heal_header) and writes nothing
      // else without recovery; the pool is closed again at once.
      try {
        fp::PoolOptions po;
        po.recover = false;
        (void)fp::Pool::open(o->path, po);
        repaired = r.header.message;
        r = fp::check_pool(o->path, !o->shallow);
      } catch (const fp::PoolError& e) {
        std::fprintf(stderr, "ferrite check --repair: %s\n", e.what());
        throw ferrite::cli::Exit{1};
      }
    }
    // Sound: the pool opens and its header slots agree (or a crash left an
    // update that open completes). A damaged slot is reported, exit 1.
    const bool structures_sound = r.damaged_roots.empty();
    const bool sound = r.ok && ferrite::cli::header_sound(r.header) && structures_sound;
    if (o->json) {
      nlohmann::json j;
      j["path"] = o->path;
      j["ok"] = sound;
      if (!r.ok) {
        j["error"] = std::string(fp::errc_name(r.error));
        j["message"] = r.message;
      } else {
        j["format_version"] = r.format_version;
        j["generation"] = r.generation;
        j["header_slot"] = r.header_slot;
        j["other_slot_valid"] = r.other_slot_valid;
        j["header"] = ferrite::cli::header_json(r.header);
        j["deep"] = {{"ran", r.deep_ran},
                     {"skipped", r.deep_skipped},
                     {"roots_checked", r.roots_checked},
                     {"damaged_roots", r.damaged_roots},
                     {"unknown_roots", r.unknown_roots}};
        if (!ferrite::cli::header_sound(r.header)) {
          j["error"] = "damaged-header-slot";
          j["message"] = r.header.message;
        } else if (!structures_sound) {
          j["error"] = "damaged-structure";
          j["message"] = r.damaged_roots.front();
        }
        if (!repaired.empty()) j["repaired"] = repaired;
      }
      std::cout << j.dump(2) << "\n";
    } else if (!r.ok) {
      std::fprintf(stderr, "%s\n", r.message.c_str());
    } else if (!sound) {
      if (!ferrite::cli::header_sound(r.header))
        std::fprintf(stderr, "%s: damaged: %s (ferrite check --repair repairs it now)\n", o->path.c_str(),
                     r.header.message.c_str());
      for (const auto& d : r.damaged_roots)
        std::fprintf(stderr, "%s: damaged structure: root %s (open leaves it closed and keeps every block)\n",
                     o->path.c_str(), d.c_str());
    } else {
      if (!repaired.empty()) std::cout << o->path << ": repaired: " << repaired << "\n";
      std::cout << o->path << ": ok (format " << r.format_version << ", generation " << r.generation;
      if (r.deep_ran) std::cout << "; " << r.roots_checked << " structure(s) checked";
      std::cout << ")\n";
      if (!r.deep_skipped.empty()) std::cout << o->path << ": note: structures not checked: " << r.deep_skipped << "\n";
      for (const auto& u : r.unknown_roots)
        std::cout << o->path << ": note: root " << u << " is of a type this program does not know: not checked\n";
      if (!r.header.message.empty()) std::cout << o->path << ": note: " << r.header.message << "\n";
    }
    throw ferrite::cli::Exit{sound ? 0 : 1};
  });
}

}  // namespace

FERRITE_REGISTER_COMMAND(check, "Validate a pool file (exit 0 sound, 1 not)", setup_check);
