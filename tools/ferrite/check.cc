// `ferrite check POOL [--json]` — validate a pool file without opening it
// (header slots, checksums, version, size, root table, chunk map).
// Exit codes: 0 sound, 1 not sound (one line on stderr says why), 2 usage.
#include <cstdio>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "ferrite/cli.h"
#include "ferrite/pmem/pool.h"

namespace {

namespace fp = ferrite::pmem;

void setup_check(CLI::App* sub) {
  struct Opts {
    std::string path;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  sub->add_option("pool", o->path, "Pool file")->required();
  sub->add_flag("--json", o->json, "Machine-readable output");
  sub->callback([o] {
    const fp::CheckReport r = fp::check_pool(o->path);
    if (o->json) {
      nlohmann::json j;
      j["path"] = o->path;
      j["ok"] = r.ok;
      if (!r.ok) {
        j["error"] = std::string(fp::errc_name(r.error));
        j["message"] = r.message;
      } else {
        j["format_version"] = r.format_version;
        j["generation"] = r.generation;
        j["header_slot"] = r.header_slot;
        j["other_slot_valid"] = r.other_slot_valid;
      }
      std::cout << j.dump(2) << "\n";
    } else if (r.ok) {
      std::cout << o->path << ": ok (format " << r.format_version << ", generation " << r.generation
                << (r.other_slot_valid ? "" : ", backup header slot invalid") << ")\n";
    } else {
      std::fprintf(stderr, "%s\n", r.message.c_str());
    }
    throw ferrite::cli::Exit{r.ok ? 0 : 1};
  });
}

}  // namespace

FERRITE_REGISTER_COMMAND(check, "Validate a pool file (exit 0 sound, 1 not)", setup_check);
