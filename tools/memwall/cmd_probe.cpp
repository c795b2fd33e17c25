// memwall probe: what this machine is (cores, SIMD features, caches, RAM) and what it measures
// (memory bandwidth, read-only and triad, multi-threaded, as the median of several passes; the
// engine's matmul throughput) and the storage read bandwidth of a folder (the current one unless
// --storage-dir says otherwise: where `memwall pull` puts models). `--save` keeps the measurement
// for `memwall plan --device this` (refused when it looks contended), `--reset` forgets the saved
// one.
#include <fmt/format.h>
#include <unistd.h>

#include <climits>

#include "common.h"
#include "plan_render.h"

namespace cli {

void add_probe_command(CLI::App& app) {
    auto* cmd = app.add_subcommand(
        "probe",
        "This machine: cores, SIMD features, caches, RAM, measured memory bandwidth (--save keeps "
        "it for plans)");
    struct Options {
        std::string threads;
        double seconds = 1.5;
        std::string array_size;
        bool json_out = false;
        bool no_measure = false;
        bool save = false;
        bool reset = false;
        bool force = false;
        std::string storage_dir = ".";
        std::string storage_size = "256M";
        bool no_storage = false;
    };
    auto opt = std::make_shared<Options>();
    cmd->add_option("-t,--threads", opt->threads,
                    "Threads for the measurements (default: decoding's, the physical cores)");
    cmd->add_option("--seconds", opt->seconds,
                    "Time budget of the measurements (at least 5 passes of each kernel)");
    cmd->add_option("--array-size", opt->array_size,
                    "Bytes per array of the bandwidth measurement, e.g. 512M (default: three "
                    "arrays together 4 x the last-level cache, or 1 GiB when it is unknown)");
    cmd->add_flag("--save", opt->save,
                  "Keep this measurement as this machine's figures for plans (`memwall`, plan "
                  "--device this); refused when it looks contended");
    cmd->add_flag("--force", opt->force, "With --save: save even a contended measurement");
    cmd->add_flag(
        "--reset", opt->reset,
        "Forget the saved measurement and bench's figures (then measure only with --save)");
    cmd->add_option("--storage-dir", opt->storage_dir,
                    "Folder whose storage read bandwidth to measure: where the models live "
                    "(default: the current folder, where memwall pull puts them)");
    cmd->add_option("--storage-size", opt->storage_size,
                    "Size of the temporary test file written there and deleted (default 256M)");
    cmd->add_flag("--no-storage", opt->no_storage, "Do not measure the storage read bandwidth");
    cmd->add_flag("--no-measure", opt->no_measure, "Only the facts; measure nothing");
    cmd->add_flag("--json", opt->json_out, "Print every number as JSON");
    cmd->callback([opt] {
        const Options& o = *opt;
        if (o.force && !o.save) fail_usage("--force goes with --save");
        if (o.no_measure && o.save) fail_usage("--save needs a measurement (drop --no-measure)");
        if (o.reset) {
            bool removed = false;
            if (mw_device_reset(&removed) != MW_OK) fail(mw_last_error());
            if (!o.json_out) {
                fmt::print("{}\n", removed ? "Forgot the saved measurement of this machine"
                                           : "No saved measurement to forget");
            }
            if (!o.save) return;
        }
        mw_probe_params p = mw_probe_default_params();
        p.n_threads = parse_threads(o.threads);
        if (p.n_threads < 0) fail_usage("-t auto: give a thread count for the probe");
        p.seconds = o.seconds;
        p.measure = !o.no_measure;
        p.write_cache = o.save;
        p.force = o.force;
        if (!o.array_size.empty()) p.array_bytes = parse_bytes(o.array_size, "--array-size");
        const bool storage = p.measure && !o.no_storage;
        if (storage) {
            p.storage_dir = o.storage_dir.c_str();
            p.storage_bytes = parse_bytes(o.storage_size, "--storage-size");
            char here[PATH_MAX];
            const std::string where =
                o.storage_dir == "." && ::getcwd(here, sizeof here) ? here : o.storage_dir;
            // The storage part writes a file: say so before it happens (on stderr, beside JSON).
            fmt::print(stderr,
                       "probe: measuring memory bandwidth, then storage reads in {}: a {} test "
                       "file written there, read back bypassing the page cache, deleted "
                       "(--no-storage skips it)\n",
                       where, human_bytes(double(p.storage_bytes)));
        }
        nlohmann::json probe = take_json(mw_probe_json(&p), "");
        const nlohmann::json gpus = take_json(mw_gpu_devices_json(), "probe");
        if (o.json_out) {
            nlohmann::json out = probe;
            out["gpus"] = gpus;
            fmt::print("{}\n", out.dump(1));
        } else {
            print_probe(probe);
            print_gpus(gpus);
        }
        if (o.save && !probe["saved"].get<bool>()) {
            fail(fmt::format(
                "probe: not saved: {}. Rerun on a quiet machine, or save it anyway with --force",
                probe["not_saved"].get<std::string>()));
        }
    });
}

}  // namespace cli
