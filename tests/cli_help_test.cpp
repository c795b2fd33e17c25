// What a newcomer meets first: help that shows every default and llama.cpp's flag spellings,
// values refused with a message, messages that say what failed, and the main job's and plan's
// choices when nothing is given.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "support/test_support.h"

namespace mw {
namespace {

using nlohmann::json;

// The CLI with a device cache of its own, holding a small saved measurement (so that plans for
// this machine are instant and the user's cache is untouched).
std::string cli(const std::string& args) {
    static const std::string cache = [] {
        const std::string dir = test::temp_dir();
        const test::CommandResult r =
            test::run_command("XDG_CACHE_HOME=" + dir + " " + test::cli_path() +
                              " probe --save --force --seconds 0.1 --array-size 8M --no-storage");
        EXPECT_EQ(r.exit_code, 0) << r.err;
        return dir;
    }();
    return "XDG_CACHE_HOME=" + cache + " " + test::cli_path() + " " + args;
}

void expect_contains(const std::string& text, const std::string& part) {
    EXPECT_NE(text.find(part), std::string::npos) << "missing \"" << part << "\" in:\n" << text;
}

TEST(CliHelp, TopLevelSaysWhatBareMemwallDoes) {
    const test::CommandResult r = test::run_command(cli("--help"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    expect_contains(r.out, "the main job");
    expect_contains(r.out, "memwall -m FILE -p TEXT     plan FILE for this machine, then run it");
    for (const char* cmd : {"run", "tokenize", "logits", "plan", "probe", "bench", "convert",
                            "perplexity", "synth", "quantize", "imatrix"}) {
        expect_contains(r.out, std::string("  ") + cmd);
    }
}

TEST(CliHelp, EverySubcommandShowsItsDefaults) {
    struct Expect {
        const char* command;
        std::vector<std::string> parts;
    };
    const Expect expects[] = {
        {"run",
         {"--temp FLOAT=0.8", "-n,--n-predict INT=-1", "until an end token or a full context",
          "--top-k INT=40", "--top-p FLOAT=0.95", "--min-p FLOAT=0.05", "-b,--batch-size UINT=512",
          "-s,--seed INT=-1", "-ctk,--cache-type-k TEXT=f16", "-ctv,--cache-type-v TEXT=f16",
          "(- : standard input)"}},
        {"bench",
         {"-p,--n-prompt INT=512", "-n,--n-gen INT=128", "-r,--repetitions INT=5",
          "-ctk,--cache-type-k TEXT=f16", "--record", "--force"}},
        {"perplexity", {"-c,--ctx-size UINT=512", "--chunks INT=0", "(0: all)", "-ctv"}},
        {"logits", {"-ctk,--cache-type-k TEXT=f16"}},
        {"plan", {"-c,--ctx-size UINT=4096", "--kv-type TEXT=f16", "-b,--batch-size UINT=512"}},
        {"probe", {"--seconds FLOAT=1.5", "--save", "--reset", "--array-size"}},
        {"synth", {"--type TEXT=Q4_K_M", "--seed UINT=1"}},
        {"imatrix", {"-o,--output TEXT=imatrix.gguf", "-c,--ctx-size UINT=512"}},
        {"quantize", {"-t,--threads INT=0"}},
        {"tokenize", {"-p,--prompt"}},
        {"convert", {"--outtype"}},
    };
    for (const Expect& e : expects) {
        SCOPED_TRACE(e.command);
        const test::CommandResult r = test::run_command(cli(std::string(e.command) + " --help"));
        ASSERT_EQ(r.exit_code, 0) << r.err;
        for (const std::string& part : e.parts) expect_contains(r.out, part);
    }
}

TEST(CliInput, PromptFromStandardInput) {
    const std::string model = test::shared_path("models/stories260K.gguf");
    const std::string args = "run -m " + model + " -n 12 --temp 0 -t 1";
    const test::CommandResult text = test::run_command(cli(args + " -p 'Once upon a time'"));
    ASSERT_EQ(text.exit_code, 0) << text.err;
    const test::CommandResult piped =
        test::run_command("printf 'Once upon a time' | " + cli(args + " -f -"));
    ASSERT_EQ(piped.exit_code, 0) << piped.err;
    EXPECT_FALSE(piped.out.empty());
    EXPECT_EQ(piped.out, text.out);
}

TEST(CliInput, ValuesAreRefusedOrCappedWithAMessage) {
    const std::string model = test::shared_path("models/stories260K.gguf");
    // Only -1 means "until done".
    const test::CommandResult n = test::run_command(cli("run -m " + model + " -p hi -n -5"));
    EXPECT_EQ(n.exit_code, 2);  // a usage error
    expect_contains(n.err, "-n -5: expected a token count, or -1");
    EXPECT_TRUE(n.out.empty()) << n.out;

    // Template variables: a JSON object; a reasoning budget other than -1 or 0.
    const test::CommandResult kw =
        test::run_command(cli("chat -m " + model + " --chat-template-kwargs '[1]' < /dev/null"));
    EXPECT_EQ(kw.exit_code, 2);
    expect_contains(kw.err, "--chat-template-kwargs [1]: expected a JSON object");
    const test::CommandResult budget =
        test::run_command(cli("serve -m " + model + " --reasoning-budget 100"));
    EXPECT_EQ(budget.exit_code, 2);
    expect_contains(budget.err, "--reasoning-budget 100: only -1 (unrestricted) and 0");

    // More threads than the machine has: a warning, and the machine's count.
    const unsigned hardware = std::thread::hardware_concurrency();
    ASSERT_GT(hardware, 0u);
    const std::string many = std::to_string(hardware + 7);
    const test::CommandResult t =
        test::run_command(cli("run -m " + model + " -p hi -n 2 --temp 0 -t " + many));
    EXPECT_EQ(t.exit_code, 0) << t.err;
    expect_contains(t.err, "warning: -t " + many + ": this machine has " +
                               std::to_string(hardware) + " hardware threads; using " +
                               std::to_string(hardware));

    // A library message that already names the step is not prefixed twice.
    const std::string dir = test::temp_dir();
    const test::CommandResult q =
        test::run_command(cli("quantize " + model + " " + dir + "/out.gguf Q9_X"));
    EXPECT_EQ(q.exit_code, 1);
    expect_contains(q.err, "quantize: unknown type");
    EXPECT_EQ(q.err.find("quantize: quantize:"), std::string::npos) << q.err;

    // A missing file cannot be loaded (it is not a planning failure).
    const test::CommandResult missing =
        test::run_command(cli("run -m " + dir + "/missing.gguf -p hi"));
    EXPECT_EQ(missing.exit_code, 1);
    expect_contains(missing.err, "cannot load the model: " + dir + "/missing.gguf: cannot open");
    EXPECT_EQ(missing.err.find("cannot plan"), std::string::npos) << missing.err;
    // The same through `memwall -m FILE` (plan, then run).
    const test::CommandResult main_job =
        test::run_command(cli("-m " + dir + "/missing.gguf -p hi"));
    EXPECT_EQ(main_job.exit_code, 1);
    expect_contains(main_job.err, "cannot load the model: " + dir + "/missing.gguf: cannot open");
}

TEST(CliPlan, DefaultDevicesRamAloneAndALegendThatApplies) {
    const std::string model = test::shared_path("reference/models/kq-tiny-Q4_K_M.gguf");
    // No --device: this machine and the phones.
    const test::CommandResult r = test::run_command(cli("plan -m " + model + " --json"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json plan = json::parse(r.out);
    std::vector<std::string> devices;
    for (const json& d : plan["devices"]) devices.push_back(d["id"]);
    EXPECT_EQ(devices, (std::vector<std::string>{"this", "phone-12g", "phone-16g", "phone-24g"}));
    const double this_bandwidth = plan["devices"][0]["bandwidth_bytes_per_s"].get<double>();
    EXPECT_GT(this_bandwidth, 0);
    EXPECT_EQ(plan["devices"][0]["bandwidth_source"], "saved measurement");

    // --ram alone: this machine's saved bandwidth.
    const test::CommandResult ram = test::run_command(cli("plan -m " + model + " --ram 8G --json"));
    ASSERT_EQ(ram.exit_code, 0) << ram.err;
    const json e = json::parse(ram.out)["devices"][0];
    EXPECT_EQ(e["ram_bytes"].get<uint64_t>(), uint64_t(8) << 30);
    EXPECT_DOUBLE_EQ(e["bandwidth_bytes_per_s"].get<double>(), this_bandwidth);
    EXPECT_EQ(e["bandwidth_source"], "this machine's saved measurement");
    const test::CommandResult bw = test::run_command(cli("plan -m " + model + " --bandwidth 20G"));
    EXPECT_EQ(bw.exit_code, 2);  // a usage error
    expect_contains(bw.err, "--bandwidth describes an explicit device: give its --ram too");

    // The legend: the file's own type is marked only where a file is planned.
    const test::CommandResult file = test::run_command(cli("plan -m " + model));
    ASSERT_EQ(file.exit_code, 0) << file.err;
    expect_contains(file.out, "* = the file's own type");
    expect_contains(file.out, "tok/s on this: +- ");
    const test::CommandResult catalogue =
        test::run_command(cli("plan --model qwen3-8b --device phone-12g"));
    ASSERT_EQ(catalogue.exit_code, 0) << catalogue.err;
    EXPECT_EQ(catalogue.out.find("* = the file's own type"), std::string::npos) << catalogue.out;
    EXPECT_EQ(catalogue.out.find("tok/s on this"), std::string::npos) << catalogue.out;
}

TEST(CliMainJob, SaysWhereFiguresAndFilesComeFromRunnableFirst) {
    const test::CommandResult r = test::run_command(cli(""));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string& out = r.out;
    expect_contains(out, "(measured: saved measurement of ");
    expect_contains(out, "a default, until `memwall bench --record -m FILE.gguf` measures it");
    expect_contains(out, "0.85 x the measured matmul");
    expect_contains(out, "probe --reset");
    expect_contains(out, "Where to get them (Hugging Face");
    const size_t source = out.find("bartowski/Qwen2.5-0.5B-Instruct-GGUF");
    ASSERT_NE(source, std::string::npos) << out;
    const std::string line = out.substr(source, out.find('\n', source) - source);
    expect_contains(line, " Qwen2.5-0.5B-Instruct-");
    expect_contains(line, ".gguf");
    expect_contains(out, "memwall plan URL");
    // A MoE model the phones run only with its experts streamed, at their own budget (issue 43).
    const size_t phones = out.find("On phones, only with experts streamed from storage");
    ASSERT_NE(phones, std::string::npos) << out;
    const size_t moe = out.find("\n  Qwen3 30B-A3B      phone-12g  ", phones);
    ASSERT_NE(moe, std::string::npos) << out;
    const std::string row = out.substr(moe + 1, out.find('\n', moe + 1) - moe - 1);
    expect_contains(row, "--mem-budget 7.5G");
    expect_contains(row, "streams experts");
    // Per row the best quality at a usable speed, and the top pick's download line (issue 40).
    expect_contains(out, "the best quantization that decodes at 10.0 tok/s or more (--min-tps)");
    expect_contains(out, "Top pick: ");
    expect_contains(out, "  memwall pull hf://");
    const test::CommandResult any_speed = test::run_command(cli("--min-tps 0"));
    ASSERT_EQ(any_speed.exit_code, 0) << any_speed.err;
    expect_contains(any_speed.out, "Models that fit (the best quantization, context");
    EXPECT_EQ(test::run_command(cli("--min-tps fast")).exit_code, 2);
    // Rows memwall can run come before those it cannot ("+").
    const size_t table = out.find("Models that fit");
    ASSERT_NE(table, std::string::npos) << out;
    const size_t first_plus = out.find(" + ", table);
    const size_t qwen = out.find("\n  Qwen2.5 0.5B ", table);
    ASSERT_NE(qwen, std::string::npos) << out;
    if (first_plus != std::string::npos) {
        EXPECT_LT(qwen, first_plus) << out;
        expect_contains(out, "+ memwall cannot run this architecture yet");
    }
}

// A prompt that would leave only the start token is refused, as -p "" is: a folder given to -f,
// an empty file, an empty standard input. `memwall -m FILE` without -p says what it uses.
TEST(CliInput, EmptyPromptsAndFoldersAreRefused) {
    const std::string model = test::shared_path("models/stories260K.gguf");
    const std::string dir = test::temp_dir();
    const std::string run = "run -m " + model + " -n 4 --temp 0 -t 1";
    struct Case {
        std::string args, message;
        int exit_code;
    };
    const test::CommandResult empty_file = test::run_command("touch " + dir + "/empty.txt");
    ASSERT_EQ(empty_file.exit_code, 0);
    for (const Case& c : std::vector<Case>{
             {cli(run + " -f " + dir), "-f " + dir + ": is a folder, not a prompt file", 1},
             {cli(run + " -f " + dir + "/empty.txt"), "the prompt file is empty", 1},
             {"printf '' | " + cli(run + " -f -"), "-f -: standard input is empty", 1},
             {cli(run + " -p ''"), "run: give a prompt with -p TEXT or -f FILE", 2}}) {
        const test::CommandResult r = test::run_command(c.args);
        EXPECT_EQ(r.exit_code, c.exit_code) << c.args << "\n" << r.err;
        expect_contains(r.err, c.message);
        EXPECT_TRUE(r.out.empty()) << c.args << " generated: " << r.out;
    }
    const test::CommandResult bare = test::run_command(cli("-m " + model + " -n 4 --temp 0"));
    ASSERT_EQ(bare.exit_code, 0) << bare.err;
    expect_contains(bare.err, "run: no prompt given (-p TEXT): using \"Once upon a time\"");
    EXPECT_FALSE(bare.out.empty());
}

// Usage errors exit with 2 and say what was meant: a mistyped command, a missing -m, an unknown
// option; failures (a missing file) stay 1; --help is 0.
TEST(CliUsage, MistypedCommandsAndAMissingModelExitTwo) {
    const std::string model = test::shared_path("models/stories260K.gguf");
    const test::CommandResult typo = test::run_command(cli("rnu -m " + model + " -p hi"));
    EXPECT_EQ(typo.exit_code, 2);
    expect_contains(typo.err, "unknown command \"rnu\"; did you mean `memwall run`?");
    const test::CommandResult typo2 = test::run_command(cli("tokenzie -m " + model + " -p hi"));
    EXPECT_EQ(typo2.exit_code, 2);
    expect_contains(typo2.err, "did you mean `memwall tokenize`?");
    const test::CommandResult far = test::run_command(cli("frobnicate"));
    EXPECT_EQ(far.exit_code, 2);
    expect_contains(far.err, "unknown command \"frobnicate\" (memwall --help lists the commands)");
    EXPECT_EQ(far.err.find("did you mean"), std::string::npos) << far.err;

    const test::CommandResult no_model = test::run_command(cli("run -p hi"));
    EXPECT_EQ(no_model.exit_code, 2);
    expect_contains(no_model.err, "run: no model given: -m FILE.gguf (--model) is required");
    const test::CommandResult unknown =
        test::run_command(cli("run -m " + model + " -p hi --no-such-flag"));
    EXPECT_EQ(unknown.exit_code, 2);
    expect_contains(unknown.err, "--no-such-flag");
    expect_contains(unknown.err, "(memwall run --help lists the options)");
    const test::CommandResult size = test::run_command(cli("run -m " + model + " -p hi -t x"));
    EXPECT_EQ(size.exit_code, 2);

    const test::CommandResult missing = test::run_command(cli("run -m /nonexistent.gguf -p hi"));
    EXPECT_EQ(missing.exit_code, 1);
    const test::CommandResult help = test::run_command(cli("--help"));
    EXPECT_EQ(help.exit_code, 0);
    expect_contains(help.out, "2 a usage error");
}

// llama.cpp's multi-letter flags: those memwall has work, those it always does are accepted, the
// others are named as not supported (CLI11 alone would read -tb as -t b).
TEST(CliUsage, LlamaCppMultiLetterFlagsAreAcceptedOrNamed) {
    const std::string model = test::shared_path("models/stories260K.gguf");
    const std::string run = "run -m " + model + " -p 'Once upon a time' -n 8 --temp 0 -t 1";
    const test::CommandResult plain = test::run_command(cli(run));
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    for (const char* flags : {" -fa", " -fa on -no-cnv", " -ngl 0 -ctk f16 -ctv f16"}) {
        const test::CommandResult r = test::run_command(cli(run + flags));
        ASSERT_EQ(r.exit_code, 0) << flags << "\n" << r.err;
        EXPECT_EQ(r.out, plain.out) << flags;
    }
    // A prompt may start with what looks like a flag.
    const test::CommandResult text =
        test::run_command(cli("tokenize -m " + model + " -p -fa --ids"));
    EXPECT_EQ(text.exit_code, 0) << text.err;
    const std::vector<std::pair<std::string, std::string>> refused = {
        {" -tb 2", "-tb is llama.cpp's; not supported by memwall: one thread count, -t"},
        {" -cnv", "-cnv is llama.cpp's; not supported by memwall: memwall chat"},
        {" -hf a/b", "memwall pull hf://"},
        {" -xyz", "unknown option -xyz (not supported by memwall"}};
    for (const auto& [flags, message] : refused) {
        const test::CommandResult r = test::run_command(cli(run + flags));
        EXPECT_EQ(r.exit_code, 2) << flags;
        expect_contains(r.err, message);
        EXPECT_TRUE(r.out.empty()) << flags;
    }
}

// stories260K was trained on 2048 tokens: serve's default slots take that (the vocabulary-only
// load used to leave it at 0, so slots got 4096), and a longer context is warned about in run
// and serve.
TEST(CliContext, AboveTheTrainingContextIsWarnedAndServeDefaultsToIt) {
    const std::string model = test::shared_path("models/stories260K.gguf");
    const std::string warning = "is more than the 2048 the model was trained on";
    const test::CommandResult fits =
        test::run_command(cli("run -m " + model + " -p hi -n 2 --temp 0 -c 2048"));
    ASSERT_EQ(fits.exit_code, 0) << fits.err;
    EXPECT_EQ(fits.err.find(warning), std::string::npos) << fits.err;
    const test::CommandResult longer =
        test::run_command(cli("run -m " + model + " -p hi -n 2 --temp 0 -c 4096"));
    ASSERT_EQ(longer.exit_code, 0) << longer.err;
    expect_contains(longer.err, "warning: run: a context of 4096 tokens " + warning);

    const std::string serve = "timeout -s INT 5 env " + cli("serve -m " + model + " --port 0");
    const test::CommandResult default_ctx = test::run_command(serve + " --parallel 2");
    expect_contains(default_ctx.err, "(2 slots of 2048 tokens");
    EXPECT_EQ(default_ctx.err.find(warning), std::string::npos) << default_ctx.err;
    const test::CommandResult asked = test::run_command(serve + " --parallel 2 -c 8192");
    expect_contains(asked.err, "(2 slots of 4096 tokens");
    expect_contains(asked.err, "warning: serve: a context of 4096 tokens per slot " + warning);
}

// bench's table: every row as wide as its header, column by column ("±" is one character), and
// a % of bandwidth above 100 explained (the model in the cache, or a busy machine).
TEST(CliBench, AlignedColumnsAndBandwidthAboveAHundredExplained) {
    const std::string model = test::shared_path("models/stories260K.gguf");
    const test::CommandResult r =
        test::run_command(cli("bench -m " + model + " -p 16 -n 16 -r 2 -t 1"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> table;
    std::stringstream lines(r.out);
    for (std::string line; std::getline(lines, line) && !line.empty();) table.push_back(line);
    ASSERT_EQ(table.size(), 3u) << r.out;  // header, pp, tg
    auto chars = [](const std::string& s) {
        size_t n = 0;
        for (unsigned char c : s) n += (c & 0xC0) != 0x80;
        return n;
    };
    // The columns end where the header's do: each header word's last character is followed by
    // two spaces or the end in every row.
    for (const std::string& row : table) EXPECT_EQ(chars(row), chars(table[0])) << r.out;
    const size_t tok_s = table[0].find("tok/s");
    ASSERT_NE(tok_s, std::string::npos);
    expect_contains(table[2], " ± ");

    const test::CommandResult j =
        test::run_command(cli("bench -m " + model + " -p 0 -n 16 -r 2 -t 1 --json"));
    ASSERT_EQ(j.exit_code, 0) << j.err;
    const json row = json::parse(j.out)[0];
    const double fraction = row["bw_fraction"].get<double>();
    const std::string because = row["bw_fraction_above_1_because"].get<std::string>();
    EXPECT_EQ(fraction > 1, !because.empty()) << fraction << ": " << because;
    // A 1 MiB model fits any last-level cache of today: above 100 %, that is the reason given.
    if (fraction > 1) expect_contains(because, "last-level cache");
    if (table[2].find(" % *") != std::string::npos)
        expect_contains(r.out, "* % of bw above 100 % (1 threads): ");
}

}  // namespace
}  // namespace mw
