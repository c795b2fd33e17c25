// memwall bench: prompt (pp) and decode (tg) speed, like llama-bench: the prompt as batches from an
// empty cache, then single-token decode steps, repeated; mean ± sd, the bytes each decoded token
// reads, and the bandwidth that achieves against what the probe measures on this machine.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common.h"
#include "spec_options.h"

namespace cli {
namespace {

using nlohmann::json;

struct Stats {
    double mean = 0, sd = 0;
};

Stats stats(const std::vector<double>& xs) {
    Stats s;
    if (xs.empty()) return s;
    for (double x : xs) s.mean += x;
    s.mean /= double(xs.size());
    if (xs.size() > 1) {
        double v = 0;
        for (double x : xs) v += (x - s.mean) * (x - s.mean);
        s.sd = std::sqrt(v / double(xs.size() - 1));
    }
    return s;
}

// The same pseudo-random prompt ids bench/llamacpp-bench.mjs uses: ids in [3, 500), valid in any
// vocabulary of 500 tokens or more (which ids are used does not change the speed); a smaller
// vocabulary gets ids in [0, n_vocab). Another seed gives another sequence.
std::vector<mw_token> bench_prompt(int n, int32_t n_vocab, uint64_t seed = 12345) {
    std::vector<mw_token> tokens(size_t(std::max(n, 1)));
    const bool small = n_vocab < 500;
    const int32_t first = small ? 0 : 3, count = small ? std::max(n_vocab, 1) : 497;
    for (mw_token& t : tokens) {
        seed = (seed * 1103515245 + 12345) % 2147483648;
        t = first + std::min(count - 1, mw_token(double(seed) / 2147483648.0 * count));
    }
    return tokens;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Read bandwidth of this machine with `threads` threads, measured by the probe, with what its
// contention check saw and the last-level cache it sized its arrays from.
struct Bandwidth {
    double bytes_per_s = 0;
    std::string contention;  // "" when none was seen
    double last_level_cache_bytes = 0;
};
Bandwidth read_bandwidth(int threads) {
    mw_probe_params p = mw_probe_default_params();
    p.n_threads = threads;
    p.seconds = 1.0;
    p.write_cache = false;
    char* text = mw_probe_json(&p);
    if (!text) return {};
    const json j = json::parse(text, nullptr, false);
    mw_free_string(text);
    if (!j.is_object()) return {};
    return {j.value("read_bandwidth_bytes_per_s", 0.0), j.value("contention", ""),
            j.value("last_level_cache_bytes", 0.0)};
}

// Why a decode read its weights faster than the machine's measured bandwidth allows.
std::string above_bandwidth(const Bandwidth& b, uint64_t bytes_per_token) {
    std::vector<std::string> why;
    if (b.last_level_cache_bytes > 0 && double(bytes_per_token) <= b.last_level_cache_bytes) {
        why.push_back(fmt::format(
            "the {:.1f} MiB each token reads fit in the {:.1f} MiB last-level cache, so decode "
            "read them from the cache, not from memory",
            double(bytes_per_token) / 1048576.0, b.last_level_cache_bytes / 1048576.0));
    }
    if (!b.contention.empty()) {
        why.push_back("the bandwidth was measured while the machine was busy (" + b.contention +
                      "), so it is below what the machine gives");
    }
    if (why.empty()) {
        why.push_back(
            "neither the cache nor contention explains it (the probe saw none): rerun on a quiet "
            "machine");
    }
    std::string text;
    for (const std::string& w : why) text += (text.empty() ? "" : "; and ") + w;
    return text;
}

// "52670.82 ± 165.76"; above 10 000 tok/s (tiny models) without decimals, to fit the column.
std::string rate_cell(const Stats& s) {
    if (s.mean >= 1e4) return fmt::format("{:.0f} ± {:.0f}", s.mean, s.sd);
    return fmt::format("{:.2f} ± {:.2f}", s.mean, s.sd);
}

// Pads to `width` characters, not bytes ("±" is two bytes, one character).
std::string pad(const std::string& s, size_t width, bool right) {
    size_t chars = 0;
    for (unsigned char c : s) chars += (c & 0xC0) != 0x80;
    const std::string fill(width > chars ? width - chars : 0, ' ');
    return right ? fill + s : s + fill;
}

json take_record(char* text) {
    if (!text) fail(std::string("bench --record: ") + mw_last_error());
    json j = json::parse(text);
    mw_free_string(text);
    return j;
}

// One line on what --record did for one thread count.
std::string record_message(const json& r, int threads) {
    if (!r["recorded"].get<bool>()) {
        return fmt::format("record ({} threads): not recorded: {}", threads,
                           r["reason"].get<std::string>());
    }
    const json& d = r["device"];
    const json& b = d["bench"];
    return fmt::format(
        "record ({} threads): decode {:.1f} % of the saved read bandwidth {:.1f} GB/s (measured "
        "{:.1f} GB/s now), saved to {}: plans for this machine use it",
        threads, 100 * b["decode_efficiency"].get<double>(),
        d["read_bandwidth_bytes_per_s"].get<double>() / 1e9,
        r["read_bandwidth_now_bytes_per_s"].get<double>() / 1e9,
        r["cache_file"].get<std::string>());
}

}  // namespace

std::vector<mw_token> bench_prompt_ids(int n, int32_t n_vocab) {
    return bench_prompt(n, n_vocab);
}

void add_bench_command(CLI::App& app) {
    auto* cmd = app.add_subcommand("bench", "Measure prompt and decode speed (like llama-bench)");
    struct Options {
        ModelOptions model;
        int n_prompt = 512;
        int n_gen = 128;
        int n_depth = 0;
        std::string threads;
        int reps = 5;
        uint32_t n_batch = 0;
        bool csv = false;
        bool as_json = false;
        bool no_bandwidth = false;
        bool record = false;
        bool force = false;
        std::string ctk = "f16", ctv = "f16";
        SustainedOptions sustained;
        std::string draft_oracle, draft_max = "4", spec_type;
    };
    auto opt = std::make_shared<Options>();
    opt->model.add_to(*cmd);
    opt->model.add_gpu_to(*cmd);
    opt->model.add_budget_to(*cmd);
    cmd->add_option("-p,--n-prompt", opt->n_prompt, "Prompt tokens (pp test; 0 skips it)");
    cmd->add_option("-n,--n-gen", opt->n_gen, "Generated tokens (tg test; 0 skips it)");
    cmd->add_option(
        "-d,--n-depth", opt->n_depth,
        "Tokens already in the cache before each test (long-context speed, as llama-bench -d)");
    cmd->add_option("-t,--threads", opt->threads,
                    "Threads: counts or \"auto\", comma-separated (default: physical cores)");
    cmd->add_option("-r,--repetitions", opt->reps, "Repetitions of each test (after one warm-up)");
    cmd->add_option("-b,--batch-size", opt->n_batch, "Prompt batch size (0: the whole prompt)");
    cmd->add_flag("--csv", opt->csv, "CSV output");
    cmd->add_flag("--json", opt->as_json, "JSON output (a list of results)");
    cmd->add_flag("--no-bandwidth", opt->no_bandwidth,
                  "Skip measuring the machine's read bandwidth (always skipped under "
                  "--mem-budget: the probe's arrays would not fit in it)");
    cmd->add_flag("--record", opt->record,
                  "Record the measured speeds as this machine's efficiency for plans (`memwall`, "
                  "plan --device this); refused when the machine looks contended");
    cmd->add_flag("--force", opt->force, "With --record: record even when it looks contended");
    cmd->add_option("--cache-type-k", opt->ctk, "KV cache key type (-ctk)");
    cmd->add_option("--cache-type-v", opt->ctv, "KV cache value type (-ctv)");
    opt->sustained.add_to(*cmd);
    cmd->add_option("--draft-oracle", opt->draft_oracle,
                    "Measurement device: speculative decoding's speed-up when each drafted token "
                    "is the target's own with probability P (comma-separated list)");
    cmd->add_option(
           "--spec-type", opt->spec_type,
           "Speculative decoding with a real drafter, mtp (the model's MTP head) or ngram: "
           "acceptance, tokens per pass and speed-up against plain decoding")
        ->check(CLI::IsMember({"mtp", "ngram"}));
    cmd->add_option("--draft-max", opt->draft_max,
                    "With --draft-oracle or --spec-type: tokens drafted per pass (comma-separated "
                    "list)")
        ->capture_default_str();
    cmd->callback([opt] {
        const Options& o = *opt;
        if (o.n_prompt < 0 || o.n_gen < 0 || o.n_depth < 0)
            fail_usage("bench: -p, -n and -d must be >= 0");
        if (o.n_prompt == 0 && o.n_gen == 0) fail_usage("bench: nothing to measure (-p 0 -n 0)");
        if (o.reps < 1) fail_usage("bench: -r must be at least 1");
        if (o.force && !o.record) fail_usage("bench: --force goes with --record");
        if (o.record && o.model.n_gpu_layers > 0) {
            fail_usage("bench: --record keeps the CPU's efficiency for plans; run it without -ngl");
        }
        // A budgeted run reads weights from storage: its speed is not the in-RAM efficiency
        // that plans scale by, and the bandwidth probe's arrays would break the budget.
        const bool budgeted = !o.model.mem_budget.empty();
        if (o.record && budgeted) {
            fail_usage(
                "bench: --record keeps the in-RAM decode efficiency for plans; a run under "
                "--mem-budget reads weights from storage: run it without --mem-budget");
        }
        std::vector<int> thread_counts;
        if (o.threads.empty()) thread_counts = {0};
        std::stringstream list(o.threads);
        for (std::string item; std::getline(list, item, ',');)
            thread_counts.push_back(parse_threads(item));
        if (thread_counts.empty()) fail_usage("-t: empty list");
        if (!o.draft_oracle.empty() || !o.spec_type.empty()) {
            if (thread_counts.size() > 1 || o.sustained.requested() || o.record) {
                fail_usage(
                    "bench --draft-oracle / --spec-type: one thread count, no --duration or "
                    "--record");
            }
            run_spec_bench({o.model, o.n_prompt, o.n_gen, thread_counts[0], o.reps, o.draft_oracle,
                            o.spec_type, o.draft_max, o.csv});
            return;
        }
        if (o.sustained.requested()) {
            if (thread_counts.size() > 1)
                fail_usage("bench --duration: give one thread count (-t)");
            if (o.record) fail_usage("bench: --record stores what -p/-n measure, not --duration");
            run_sustained_bench(
                {o.model, o.n_prompt, o.n_gen, o.n_depth, thread_counts[0], o.n_batch,
                 parse_kv_type(o.ctk, "-ctk"), parse_kv_type(o.ctv, "-ctv"), o.csv, o.as_json},
                o.sustained);
            return;
        }
        if (!o.sustained.plot.empty() || o.sustained.pacing.enabled())
            fail_usage("bench: --plot, --max-temp and --max-tps go with --duration");
        ModelPtr model = load_model(o.model, false, /*quiet=*/o.as_json || o.csv);
        const std::string backend = backend_name(model.get(), o.model);
        const std::vector<mw_token> prompt =
            bench_prompt(o.n_prompt, mw_model_n_vocab(model.get()));
        const std::vector<mw_token> depth = bench_prompt(o.n_depth, mw_model_n_vocab(model.get()));

        json results = json::array();
        std::vector<std::string> record_messages;
        bool any_recorded = false;
        if (o.csv) {
            fmt::print(
                "model,threads,n_prompt,n_gen,pp_tok_s,pp_tok_s_sd,tg_tok_s,tg_tok_s_sd,"
                "model_bytes,bytes_per_token,tg_gb_s,bw_fraction,n_depth,pp_conditions,"
                "tg_conditions,backend\n");
        }
        // Column widths fixed before the first row (rows print as they are measured): the
        // conditions' label at the widest thread count, the model's name up to 40 characters.
        mw_speed_conditions widest{};
        widest.n_prompt = std::max(o.n_prompt, o.n_gen);
        widest.n_depth = o.n_depth;
        widest.n_threads = 999;
        widest.type_k = parse_kv_type(o.ctk, "-ctk");
        widest.type_v = parse_kv_type(o.ctv, "-ctv");
        const std::string name = o.model.path.size() > 40
                                     ? "..." + o.model.path.substr(o.model.path.size() - 37)
                                     : o.model.path;
        const std::vector<size_t> widths = {std::max<size_t>(name.size(), 5),
                                            std::max<size_t>(backend.size(), 7),
                                            7,
                                            std::max<size_t>(speed_label(widest).size(), 4),
                                            17,
                                            7,
                                            9};
        auto print_row = [&](const std::vector<std::string>& cells) {
            std::string line;
            for (size_t i = 0; i < cells.size(); ++i)
                line += (i ? "  " : "") + pad(cells[i], widths[i], i > 0);
            fmt::print("{}\n", line);
        };
        if (!o.csv && !o.as_json)
            print_row({"model", "backend", "threads", "test", "tok/s", "GB/s", "% of bw"});
        std::vector<std::string> notes;  // why a row's % of bw is above 100
        for (int threads : thread_counts) {
            mw_context_params cp = mw_context_default_params();
            cp.n_ctx = uint32_t(std::max(o.n_prompt, 1) + o.n_gen + o.n_depth + 8);
            cp.n_batch = o.n_batch ? o.n_batch : uint32_t(std::max(o.n_prompt, 1));
            cp.n_threads = threads;
            cp.type_k = parse_kv_type(o.ctk, "-ctk");
            cp.type_v = parse_kv_type(o.ctv, "-ctv");
            ContextPtr ctx = create_context(model.get(), cp);
            const int used_threads = mw_context_n_threads(ctx.get());

            // An empty cache, then the -d tokens (not timed).
            auto reset = [&] {
                mw_context_truncate(ctx.get(), 0);
                if (o.n_depth > 0) {
                    if (mw_status st =
                            mw_decode(ctx.get(), depth.data(), int32_t(depth.size()), false);
                        st != MW_OK) {
                        fail_status(st, "bench");
                    }
                }
            };
            std::vector<double> pp, tg;
            mw_expert_cache_stats tg_cache{};   // the timed decode steps' expert cache use
            mw_layer_stream_stats tg_layers{};  // and layer stream use
            uint64_t tg_tokens = 0;
            for (int rep = -1; rep < o.reps; ++rep) {  // rep -1 warms up caches and page tables
                if (o.n_prompt > 0) {
                    reset();
                    const auto start = std::chrono::steady_clock::now();
                    if (mw_status st =
                            mw_decode(ctx.get(), prompt.data(), int32_t(prompt.size()), false);
                        st != MW_OK) {
                        fail_status(st, "bench");
                    }
                    if (rep >= 0) pp.push_back(o.n_prompt / seconds_since(start));
                }
                if (o.n_gen > 0) {
                    reset();
                    mw_context_perf_reset(ctx.get());  // bytes read: decode steps of this test only
                    // Tokens of their own, other ones in each repetition, as llama-bench decodes
                    // random ids: replaying the prompt's tokens at its positions, or the warm-up's,
                    // would route a mixture of experts exactly as before, and an expert cache
                    // would report hits no new text gets.
                    const std::vector<mw_token> feed = bench_prompt(
                        o.n_gen, mw_model_n_vocab(model.get()), uint64_t(54321 + 7919 * (rep + 2)));
                    const mw_expert_cache_stats before = expert_cache_stats(model.get());
                    const mw_layer_stream_stats layers_before = layer_stream_stats(model.get());
                    const auto start = std::chrono::steady_clock::now();
                    for (int i = 0; i < o.n_gen; ++i) {
                        mw_token tok = feed[size_t(i)];
                        if (mw_status st = mw_decode(ctx.get(), &tok, 1, false); st != MW_OK)
                            fail_status(st, "bench");
                    }
                    if (rep >= 0) {
                        tg.push_back(o.n_gen / seconds_since(start));
                        const mw_expert_cache_stats d =
                            expert_cache_delta(expert_cache_stats(model.get()), before);
                        const mw_expert_cache_stats sum = tg_cache;
                        tg_cache = d;
                        tg_cache.acquires += sum.acquires;
                        tg_cache.hits += sum.hits;
                        tg_cache.prefetched += sum.prefetched;
                        tg_cache.waited += sum.waited;
                        tg_cache.misses += sum.misses;
                        tg_cache.bytes_read += sum.bytes_read;
                        tg_cache.predictable += sum.predictable;
                        tg_cache.predicted += sum.predicted;
                        add_layer_stream_use(tg_layers, layer_stream_stats(model.get()),
                                             layers_before);
                        tg_tokens += uint64_t(o.n_gen);
                    }
                }
            }
            const Stats ps = stats(pp), ts = stats(tg);
            const uint64_t model_bytes = mw_model_weight_bytes(model.get());
            // Bytes each decoded token read, as counted by the decode steps (MoE: the experts
            // the router chose); the model's static figure when nothing was decoded.
            const mw_perf tg_perf = mw_context_perf(ctx.get());
            const uint64_t bytes_per_token =
                tg_perf.n_decode_tokens > 0
                    ? tg_perf.decode_weight_bytes / uint64_t(tg_perf.n_decode_tokens)
                    : mw_model_bytes_per_token(model.get());
            const double tg_gb_s = ts.mean * double(bytes_per_token) / 1e9;
            json record;
            if (o.record) {
                mw_bench_record rec{};
                rec.model = o.model.path.c_str();
                rec.n_threads = used_threads;
                rec.n_reps = o.reps;
                rec.decode_bytes_per_token = bytes_per_token;
                rec.decode_tok_s = ts.mean;
                rec.decode_tok_s_sd = ts.sd;
                rec.prompt_flops_per_token = 2.0 * double(mw_model_n_params(model.get()));
                rec.prompt_tok_s = ps.mean;
                rec.prompt_tok_s_sd = ps.sd;
                rec.force = o.force;
                record = take_record(mw_device_record_bench(&rec));
                record_messages.push_back(record_message(record, used_threads));
                any_recorded = any_recorded || record["recorded"].get<bool>();
            }
            // The record measured the bandwidth now with these threads: no need to again.
            const double record_bandwidth =
                o.record ? record["read_bandwidth_now_bytes_per_s"].get<double>() : 0.0;
            Bandwidth measured;
            if (!o.no_bandwidth && !budgeted && o.n_gen > 0) {
                measured = record_bandwidth > 0 ? Bandwidth{record_bandwidth, "", 0}
                                                : read_bandwidth(used_threads);
            }
            const double bandwidth = measured.bytes_per_s;
            const double bw_fraction = bandwidth > 0 ? tg_gb_s * 1e9 / bandwidth : 0.0;
            std::string above;  // why the decode read faster than the bandwidth allows
            if (bw_fraction > 1) {
                // The record's measurement does not say what the probe saw: ask the probe.
                if (measured.last_level_cache_bytes == 0) {
                    const Bandwidth probe = read_bandwidth(used_threads);
                    measured.contention = probe.contention;
                    measured.last_level_cache_bytes = probe.last_level_cache_bytes;
                }
                above = above_bandwidth(measured, bytes_per_token);
            }
            const mw_perf perf = mw_context_perf(ctx.get());
            mw_speed_conditions pp_c{};
            pp_c.n_prompt = o.n_prompt;
            pp_c.n_depth = o.n_depth;
            pp_c.n_threads = used_threads;
            pp_c.type_k = cp.type_k;
            pp_c.type_v = cp.type_v;
            mw_speed_conditions tg_c = pp_c;
            tg_c.n_prompt = 0;
            tg_c.n_gen = o.n_gen;
            const std::string pp_label = speed_label(pp_c), tg_label = speed_label(tg_c);

            json r = {{"model", o.model.path},
                      {"model_desc", mw_model_desc(model.get())},
                      {"threads", used_threads},
                      {"isa", mw_system_info()},
                      {"backend", backend},
                      {"n_prompt", o.n_prompt},
                      {"n_gen", o.n_gen},
                      {"n_depth", o.n_depth},
                      {"reps", o.reps},
                      {"pp_tok_s", ps.mean},
                      {"pp_tok_s_sd", ps.sd},
                      {"tg_tok_s", ts.mean},
                      {"tg_tok_s_sd", ts.sd},
                      {"model_bytes", model_bytes},
                      {"bytes_per_token", bytes_per_token},
                      {"tg_gb_s", tg_gb_s},
                      {"read_bandwidth_gb_s", bandwidth / 1e9},
                      {"bw_fraction", bw_fraction},
                      {"bw_fraction_above_1_because", above},
                      {"kv_bytes", perf.kv_bytes},
                      {"scratch_bytes", perf.scratch_bytes},
                      {"peak_rss_bytes", perf.peak_rss_bytes},
                      {"major_faults", perf.major_faults},
                      {"minor_faults", perf.minor_faults},
                      {"pp_conditions", pp_label},
                      {"tg_conditions", tg_label}};
            if (tg_cache.budget_bytes > 0) {
                r["mem_budget_bytes"] = tg_cache.budget_bytes;
                r["resident_weight_bytes"] = tg_cache.resident_bytes;
                r["expert_cache"] = {{"slots", tg_cache.n_slots},
                                     {"slot_bytes", tg_cache.slot_bytes},
                                     {"experts_total", tg_cache.experts_total},
                                     {"tg_acquires", tg_cache.acquires},
                                     {"tg_hits", tg_cache.hits},
                                     {"tg_prefetched", tg_cache.prefetched},
                                     {"tg_waited", tg_cache.waited},
                                     {"tg_misses", tg_cache.misses},
                                     {"tg_bytes_read_per_token",
                                      tg_tokens ? tg_cache.bytes_read / tg_tokens : uint64_t(0)},
                                     {"tg_predictable", tg_cache.predictable},
                                     {"tg_predicted", tg_cache.predicted},
                                     {"direct_io", tg_cache.direct_io}};
            }
            if (tg_layers.budget_bytes > 0) {
                r["layer_stream"] = {{"slots", tg_layers.n_slots},
                                     {"pinned", tg_layers.pinned},
                                     {"n_layer", tg_layers.n_layer},
                                     {"slot_bytes", tg_layers.slot_bytes},
                                     {"tg_acquires", tg_layers.acquires},
                                     {"tg_hits", tg_layers.hits},
                                     {"tg_prefetched", tg_layers.prefetched},
                                     {"tg_waited", tg_layers.waited},
                                     {"tg_misses", tg_layers.misses},
                                     {"tg_bytes_read_per_token",
                                      tg_tokens ? tg_layers.bytes_read / tg_tokens : uint64_t(0)},
                                     {"tg_wait_ms_per_token",
                                      tg_tokens ? tg_layers.wait_ms / double(tg_tokens) : 0.0},
                                     {"direct_io", tg_layers.direct_io}};
            }
            if (o.record) {
                r["recorded"] = record["recorded"];
                r["record_reason"] = record["reason"];
            }
            results.push_back(r);
            if (o.csv) {
                fmt::print(
                    "{},{},{},{},{:.3f},{:.3f},{:.3f},{:.3f},{},{},{:.3f},{:.4f},{},{},{},{}\n",
                    o.model.path, used_threads, o.n_prompt, o.n_gen, ps.mean, ps.sd, ts.mean, ts.sd,
                    model_bytes, bytes_per_token, tg_gb_s, bw_fraction, o.n_depth, pp_label,
                    tg_label, backend);
            } else if (!o.as_json) {
                if (o.n_prompt > 0) {
                    print_row({name, backend, std::to_string(used_threads), pp_label, rate_cell(ps),
                               "", ""});
                }
                if (o.n_gen > 0) {
                    std::string share = "-";
                    if (bandwidth > 0) share = fmt::format("{:.0f} %", 100 * bw_fraction);
                    if (!above.empty()) {
                        notes.push_back(fmt::format("{} threads: {}", used_threads, above));
                        share += " *";
                    }
                    print_row({name, backend, std::to_string(used_threads), tg_label, rate_cell(ts),
                               fmt::format("{:.2f}", tg_gb_s), share});
                    std::fflush(stdout);
                    print_budget_report(tg_cache, tg_tokens, perf.peak_rss_bytes);
                    print_layer_stream_report(tg_layers, tg_tokens);
                }
            }
        }
        if (o.as_json) {
            fmt::print("{}\n", results.dump(2));
        } else if (!o.csv) {
            fmt::print(
                "\nmodel: {} ({:.2f} MiB of weights, {:.2f} MiB read per decoded token); {}\n",
                mw_model_desc(model.get()), mw_model_weight_bytes(model.get()) / 1048576.0,
                mw_model_bytes_per_token(model.get()) / 1048576.0, mw_system_info());
            fmt::print(
                "(GB/s counts the weight bytes each decode step read: for a mixture of experts, "
                "only the experts its router chose)\n");
            for (const std::string& n : notes)
                fmt::print("* % of bw above 100 % ({}): {}\n", n.substr(0, n.find(':')),
                           n.substr(n.find(':') + 2));
            if (budgeted && o.n_gen > 0 && !o.no_bandwidth) {
                fmt::print(
                    "(% of bw: not measured under --mem-budget: the bandwidth probe's arrays "
                    "would not fit in the budget)\n");
            }
        }
        for (const std::string& m : record_messages) fmt::print(stderr, "{}\n", m);
        if (o.record && !any_recorded) fail("bench: nothing recorded (--force records anyway)");
    });
}

}  // namespace cli
