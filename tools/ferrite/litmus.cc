// `ferrite litmus FILE... [--model M] [--drop RULE] [--json]` — decide
// persistency litmus tests under each model (docs/litmus.md): for every
// test and model, whether the post-crash condition is allowed or
// forbidden, and whether that is what the test expects. Exit status: 0
// every verdict matches, 1 a mismatch, 2 a usage or format error.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ferrite/cli.h"
#include "ferrite/crash/model.h"
#include "ferrite/litmus/litmus.h"

namespace {

namespace fc = ferrite::crash;
namespace fl = ferrite::litmus;

void setup_litmus(CLI::App* sub) {
  struct Opts {
    std::vector<std::string> files;
    std::vector<std::string> models;
    std::string drop;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  sub->add_option("files", o->files, "Litmus test files (format: docs/litmus.md)")->required();
  sub->add_option("--model", o->models, "Models to decide under (repeatable; default: every registered model)");
  sub->add_option("--drop", o->drop,
                  "Remove one rule of the (single) --model store model, e.g. --model strand --drop spa; "
                  "expectations are then not checked");
  sub->add_flag("--json", o->json, "Machine-readable output");
  sub->footer(
      "Every interleaving of the threads and every crash point of it is explored; each crash state's images come "
      "from the same model objects the crash simulator uses. Models: abstract, hops, hops+, strand, x86.");
  sub->callback([o] {
    std::vector<std::string> models = o->models.empty() ? fc::model_names() : o->models;
    for (const auto& m : models)
      if (fc::find_model(m) == nullptr) {
        std::string known;
        for (const auto& n : fc::model_names()) known += " " + n;
        std::fprintf(stderr, "ferrite litmus: unknown model '%s' (known:%s)\n", m.c_str(), known.c_str());
        throw ferrite::cli::Exit{2};
      }
    std::unique_ptr<fc::Model> mutated;
    if (!o->drop.empty()) {
      if (models.size() != 1) {
        std::fprintf(stderr, "ferrite litmus: --drop needs exactly one --model\n");
        throw ferrite::cli::Exit{2};
      }
      try {
        mutated = fc::make_model_without(models[0], o->drop);
      } catch (const std::invalid_argument& e) {
        std::fprintf(stderr, "ferrite litmus: %s\n", e.what());
        throw ferrite::cli::Exit{2};
      }
    }
    std::vector<fl::Test> tests;
    for (const auto& f : o->files) {
      try {
        auto t = fl::parse_file(f);
        tests.insert(tests.end(), t.begin(), t.end());
      } catch (const fl::ParseError& e) {
        std::fprintf(stderr, "ferrite litmus: %s\n", e.what());
        throw ferrite::cli::Exit{2};
      }
    }
    nlohmann::json out = nlohmann::json::array();
    int mismatches = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (const auto& t : tests) {
      nlohmann::json jt;
      jt["name"] = t.name;
      jt["file"] = t.file;
      jt["condition"] = t.condition_text;
      jt["models"] = nlohmann::json::object();
      if (!o->json)
        std::cout << t.name << (t.description.empty() ? "" : " — " + t.description) << "\n  crash " << t.condition_text
                  << "\n";
      for (const auto& name : models) {
        const fc::Model& m = mutated ? *mutated : *fc::find_model(name);
        const fl::Verdict v = fl::run(t, m);
        const auto e = t.expect.find(name);
        const bool checked = !mutated && e != t.expect.end();
        const bool ok = !checked || e->second == v.allowed;
        if (!ok) ++mismatches;
        const char* verdict = v.allowed ? "allowed" : "forbidden";
        std::string status = !checked ? (mutated ? "not checked (rule dropped)" : "no expectation")
                                      : ok ? "as expected" : std::string("MISMATCH: expected ") +
                                                                 (e->second ? "allowed" : "forbidden");
        jt["models"][name] = {{"verdict", verdict},
                              {"expected", checked ? nlohmann::json(e->second ? "allowed" : "forbidden") : nlohmann::json()},
                              {"match", ok},
                              {"interleavings", v.interleavings},
                              {"crash_states", v.crash_states},
                              {"images", v.images},
                              {"witness", v.witness}};
        if (!o->drop.empty()) jt["models"][name]["dropped_rule"] = o->drop;
        if (!o->json) {
          std::printf("  %-8s %-9s %s  (%llu interleavings, %llu crash states, %llu images)\n", name.c_str(), verdict,
                      status.c_str(), static_cast<unsigned long long>(v.interleavings),
                      static_cast<unsigned long long>(v.crash_states), static_cast<unsigned long long>(v.images));
          if (v.allowed && (!ok || !o->drop.empty())) std::printf("           witness: %s\n", v.witness.c_str());
        }
      }
      out.push_back(jt);
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (o->json) {
      std::cout << nlohmann::json{{"tests", out}, {"mismatches", mismatches}, {"seconds", secs}}.dump(2) << "\n";
    } else {
      std::printf("%zu tests x %zu models: %d mismatches (%.2f s)\n", tests.size(), models.size(), mismatches, secs);
    }
    if (mismatches > 0) throw ferrite::cli::Exit{1};
  });
}

}  // namespace

FERRITE_REGISTER_COMMAND(litmus, "Decide persistency litmus tests under each model", setup_litmus);
