// Remote files on loopback only: tests/http_test_server.py serves the shared models and injects
// the faults (no range support, errors, dropped connections, throttling, a file that changes,
// wrong hashes). A remote plan must equal the local plan after reading only the header; `pull`
// must end with the exact file or keep a .part it can resume, and never splice two versions.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "format/gguf.h"
#include "memwall.h"
#include "net/sha256.h"
#include "net/url.h"
#include "support/http_test_server.h"
#include "support/test_support.h"

extern char** environ;

namespace mw {
namespace {

using nlohmann::json;

constexpr const char* kModels[] = {"models/stories260K.gguf", "models/llama-2-tiny-random.gguf",
                                   "reference/models/moe-tiny-Q4_K_M.gguf"};

std::optional<uint64_t> size_of(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return std::nullopt;
    return uint64_t(st.st_size);
}

bool exists(const std::string& path) {
    return size_of(path).has_value();
}

// A folder of links to the shared models, served by one server for the whole suite; each test
// starts with no faults, an empty request log and its own output folder.
class Remote : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        if (!test::HttpTestServer::unavailable().empty()) return;
        const std::string root = test::temp_dir();
        for (const char* rel : kModels) {
            const std::string path = test::shared_path(rel);
            const std::string name = path.substr(path.rfind('/') + 1);
            if (::symlink(path.c_str(), (root + "/" + name).c_str()) != 0) {
                ADD_FAILURE() << "cannot link " << path;
            }
        }
        // The first 60 % of a model: a file shorter than its own tensor table.
        const std::vector<uint8_t> whole = test::read_file(test::shared_path(kModels[0]));
        std::ofstream(root + "/truncated.gguf", std::ios::binary)
            .write(reinterpret_cast<const char*>(whole.data()),
                   std::streamsize(whole.size() * 6 / 10));
        server_ = new test::HttpTestServer(root);
    }
    static void TearDownTestSuite() {
        delete server_;
        server_ = nullptr;
    }

    void SetUp() override {
        if (const std::string why = test::HttpTestServer::unavailable(); !why.empty()) {
            GTEST_SKIP() << why;
        }
        ASSERT_TRUE(server_ && server_->running());
        server_->set_control(json::object());
        server_->clear_requests();
        out_ = test::temp_dir();
    }

    // memwall pull with quick retries, writing into out_.
    test::CommandResult pull(const std::string& url, const std::string& args = "") {
        return test::run_command("timeout 120 " + test::cli_path() + " pull " + url + " -o " +
                                 out_ + "/model.gguf --retry-delay 0.05 " + args);
    }
    std::string out(const std::string& suffix = "") const { return out_ + "/model.gguf" + suffix; }

    // The download requests (after the header's): what each asked for.
    std::vector<std::string> ranges() const {
        std::vector<std::string> r;
        for (const json& q : server_->requests()) {
            const std::string range = q["range"].is_string() ? q["range"].get<std::string>() : "";
            // The header is read with closed ranges (bytes=A-B); the download asks for the rest.
            if (range.empty() || range.back() == '-') r.push_back(range);
        }
        return r;
    }

    std::string out_;
    static test::HttpTestServer* server_;
};

test::HttpTestServer* Remote::server_ = nullptr;

json plan(const json& model) {
    const json request = {{"models", {model}},
                          {"devices", {"phone-8g"}},
                          {"quants", {"Q8_0", "Q4_K_M"}},
                          {"ctx", 1024}};
    char* text = mw_plan_json(request.dump().c_str());
    if (!text) {
        ADD_FAILURE() << mw_last_error();
        return json();
    }
    json j = json::parse(text);
    mw_free_string(text);
    return j;
}

TEST_F(Remote, PlanEqualsTheLocalPlanFromTheHeaderAlone) {
    for (const char* rel : kModels) {
        const std::string path = test::shared_path(rel);
        const std::string name = path.substr(path.rfind('/') + 1);
        SCOPED_TRACE(name);
        server_->clear_requests();
        json local = plan({{"file", path}});
        json remote = plan({{"url", server_->url(name)}});
        ASSERT_TRUE(remote.is_object());
        const json info = remote["models"][0]["remote"];
        // What was read: the header, in a few range requests, and no more than twice its size.
        const std::vector<uint8_t> bytes = test::read_file(path);
        const gguf::GgufFile file = gguf::GgufFile::parse(bytes, name);
        EXPECT_EQ(info["file_bytes"].get<uint64_t>(), bytes.size());
        const uint64_t read = info["bytes_read"].get<uint64_t>();
        EXPECT_GE(read, file.data_offset());
        EXPECT_LE(read, std::max<uint64_t>(2 * file.data_offset(), 64 << 10));
        EXPECT_LT(read, bytes.size());
        EXPECT_EQ(info["sha256"], net::sha256_file(path));
        const std::vector<json> requests = server_->requests();
        EXPECT_EQ(int(requests.size()), info["requests"].get<int>());
        for (const json& q : requests) {
            EXPECT_EQ(q["status"], 206) << q.dump();
            EXPECT_TRUE(q["range"].is_string()) << q.dump();
        }
        // Apart from where it came from, the same plan.
        for (json* j : {&local, &remote}) {
            json& m = (*j)["models"][0];
            m.erase("origin");
            m.erase("source");
            m.erase("remote");
        }
        EXPECT_EQ(local.dump(1), remote.dump(1));
    }

    // The command line: the URL as the model, and how much it read.
    const test::CommandResult r = test::run_command(
        test::cli_path() + " plan " + server_->url("llama-2-tiny-random.gguf") + " -c 512");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("remote: read"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("range request"), std::string::npos) << r.out;
}

TEST_F(Remote, HuggingFaceNamesFollowTheRedirectAndItsLinkedEtag) {
    ::setenv("MEMWALL_HF_ENDPOINT", server_->endpoint().c_str(), 1);
    ::setenv("HF_TOKEN", "test-token", 1);
    const json remote = plan({{"url", "hf://owner/repo@v1.0/stories260K.gguf"}});
    ::unsetenv("HF_TOKEN");
    ASSERT_TRUE(remote.is_object());
    const json info = remote["models"][0]["remote"];
    EXPECT_EQ(info["url"], server_->endpoint() + "/owner/repo/resolve/v1.0/stories260K.gguf");
    EXPECT_EQ(info["resolved_url"], server_->endpoint() + "/cdn/stories260K.gguf");
    // The CDN's ETag is no hash; the redirect's X-Linked-Etag is.
    EXPECT_EQ(info["sha256"], net::sha256_file(test::shared_path("models/stories260K.gguf")));
    const std::vector<json> requests = server_->requests();
    ASSERT_GE(requests.size(), 2u);
    EXPECT_EQ(requests[0]["status"], 302);
    EXPECT_EQ(requests[0]["authorization"], "Bearer test-token");

    // pull through the same name: the hash from the redirect checks the file.
    const test::CommandResult r =
        test::run_command("MEMWALL_HF_ENDPOINT=" + server_->endpoint() + " " + test::cli_path() +
                          " pull hf://owner/repo/stories260K.gguf -o " + out());
    ::unsetenv("MEMWALL_HF_ENDPOINT");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("matches the server's ETag"), std::string::npos) << r.out;
    EXPECT_EQ(test::read_file(out()),
              test::read_file(test::shared_path("models/stories260K.gguf")));
}

TEST_F(Remote, UrlNames) {
    ::setenv("MEMWALL_HF_ENDPOINT", "http://mirror.example/", 1);
    EXPECT_EQ(net::resolve_url("hf://a/b/sub/c.gguf").url,
              "http://mirror.example/a/b/resolve/main/sub/c.gguf");
    EXPECT_EQ(net::resolve_url("hf://a/b@refs/pr/1/c.gguf").url,
              "http://mirror.example/a/b/resolve/refs/pr/1/c.gguf");
    EXPECT_EQ(net::resolve_url("hf://a/b@v2/c.gguf").file_name, "c.gguf");
    ::unsetenv("MEMWALL_HF_ENDPOINT");
    EXPECT_THROW(net::resolve_url("hf://a/c.gguf"), Error);
    EXPECT_THROW(net::resolve_url("ftp://a/c.gguf"), Error);
    const std::string hex(64, 'a');
    EXPECT_EQ(net::sha256_from_etag("\"" + hex + "\""), hex);
    EXPECT_EQ(net::sha256_from_etag(std::string(64, 'A')), hex);
    EXPECT_EQ(net::sha256_from_etag("W/\"" + hex + "\""), std::nullopt);
    EXPECT_EQ(net::sha256_from_etag("\"" + hex.substr(1) + "\""), std::nullopt);
}

TEST_F(Remote, ServerWithoutRangesIsRefusedNotDownloaded) {
    server_->set_control({{"no_range", true}});
    const std::string url = server_->url("llama-2-tiny-random.gguf");
    const test::CommandResult p = test::run_command(test::cli_path() + " plan " + url);
    EXPECT_EQ(p.exit_code, 1);
    EXPECT_NE(p.err.find("does not support range requests"), std::string::npos) << p.err;
    EXPECT_NE(p.err.find(url), std::string::npos) << p.err;
    const test::CommandResult r = pull(url);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("does not support range requests"), std::string::npos) << r.err;
    EXPECT_FALSE(exists(out(".part")));
    EXPECT_FALSE(exists(out()));
}

TEST_F(Remote, ErrorStatusesAreClear) {
    const test::CommandResult missing = pull(server_->url("nothing.gguf"));
    EXPECT_EQ(missing.exit_code, 1);
    EXPECT_NE(missing.err.find("HTTP 404 (Not Found)"), std::string::npos) << missing.err;
    EXPECT_NE(missing.err.find("no such file"), std::string::npos) << missing.err;
    server_->set_control({{"status", 500}});
    const test::CommandResult failing = pull(server_->url("stories260K.gguf"));
    EXPECT_EQ(failing.exit_code, 1);
    EXPECT_NE(failing.err.find("HTTP 500"), std::string::npos) << failing.err;
    const test::CommandResult planned =
        test::run_command(test::cli_path() + " plan " + server_->url("stories260K.gguf"));
    EXPECT_EQ(planned.exit_code, 1);
    EXPECT_NE(planned.err.find("HTTP 500"), std::string::npos) << planned.err;
    EXPECT_FALSE(exists(out(".part")));
}

TEST_F(Remote, PullChecksTheServersHashAndLeavesNothingBehind) {
    const std::string src = test::shared_path("models/llama-2-tiny-random.gguf");
    const test::CommandResult r = pull(server_->url("llama-2-tiny-random.gguf"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(test::read_file(out()), test::read_file(src));
    EXPECT_FALSE(exists(out(".part")));
    EXPECT_FALSE(exists(out(".part.json")));
    EXPECT_NE(r.out.find("plan: "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("read the header"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(net::sha256_file(src) + " matches the server's ETag"), std::string::npos)
        << r.out;
    // Plain progress lines (stdout is no terminal here).
    EXPECT_NE(r.out.find("pull: "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("ETA"), std::string::npos) << r.out;

    // Again: the file is there and checked, not downloaded again.
    server_->clear_requests();
    const test::CommandResult again = pull(server_->url("llama-2-tiny-random.gguf"));
    EXPECT_EQ(again.exit_code, 0) << again.err;
    EXPECT_NE(again.out.find("is there already"), std::string::npos) << again.out;
    EXPECT_TRUE(ranges().empty());
}

TEST_F(Remote, DroppedConnectionsResumeAndTheHashMatches) {
    const std::string src = test::shared_path("models/stories260K.gguf");
    server_->set_control({{"drop_after", 300000}, {"drops", 2}});
    const test::CommandResult r = pull(server_->url("stories260K.gguf"));
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    EXPECT_EQ(test::read_file(out()), test::read_file(src));
    EXPECT_NE(r.out.find("2 retries"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("retrying in"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(net::sha256_file(src) + " matches the server's ETag"), std::string::npos)
        << r.out;
    // Each retry continued where the last one stopped.
    EXPECT_EQ(ranges(), (std::vector<std::string>{"bytes=0-", "bytes=300000-", "bytes=600000-"}));
}

TEST_F(Remote, InterruptedPullContinuesWhereItStopped) {
    const std::string src = test::shared_path("models/stories260K.gguf");
    const std::string url = server_->url("stories260K.gguf");
    // The attempt is cut at 500000 bytes and no retry is allowed: the .part stays.
    server_->set_control({{"drop_after", 500000}, {"drops", 1}});
    const test::CommandResult first = pull(url, "--retries 0");
    EXPECT_EQ(first.exit_code, 1);
    EXPECT_NE(first.err.find("no retry is left"), std::string::npos) << first.err;
    EXPECT_NE(first.err.find("keeps 500000 of"), std::string::npos) << first.err;
    EXPECT_NE(first.err.find("pull again to continue"), std::string::npos) << first.err;
    EXPECT_EQ(size_of(out(".part")), 500000u);
    EXPECT_FALSE(exists(out()));
    const test::CommandResult second = pull(url);
    ASSERT_EQ(second.exit_code, 0) << second.err;
    EXPECT_NE(second.out.find("resumed at byte 500000"), std::string::npos) << second.out;
    EXPECT_EQ(test::read_file(out()), test::read_file(src));
    EXPECT_EQ(ranges(), (std::vector<std::string>{"bytes=0-", "bytes=500000-"}));
}

TEST_F(Remote, AFileThatChangedStartsOverInsteadOfSplicing) {
    // The same URL serves stories260K first, then llama-2-tiny-random.
    server_->set_control(
        {{"serve", {{"/model.gguf", "stories260K.gguf"}}}, {"drop_after", 400000}, {"drops", 1}});
    const std::string url = server_->url("model.gguf");
    const test::CommandResult first = pull(url, "--retries 0");
    EXPECT_EQ(first.exit_code, 1);
    EXPECT_EQ(size_of(out(".part")), 400000u);
    server_->set_control({{"serve", {{"/model.gguf", "llama-2-tiny-random.gguf"}}}});
    server_->clear_requests();
    const test::CommandResult second = pull(url);
    ASSERT_EQ(second.exit_code, 0) << second.err;
    EXPECT_NE(second.out.find("starting again from byte 0"), std::string::npos) << second.out;
    EXPECT_NE(second.out.find("ETag"), std::string::npos) << second.out;
    EXPECT_NE(second.out.find("1 restart)"), std::string::npos) << second.out;
    EXPECT_EQ(test::read_file(out()),
              test::read_file(test::shared_path("models/llama-2-tiny-random.gguf")));
    EXPECT_EQ(ranges(), (std::vector<std::string>{"bytes=0-"}));
}

TEST_F(Remote, WrongHashIsRefusedAndThePartKept) {
    const std::string url = server_->url("stories260K.gguf");
    const std::string wrong(64, 'e');
    const test::CommandResult given = pull(url, "--sha256 " + wrong);
    EXPECT_EQ(given.exit_code, 1);
    EXPECT_NE(given.err.find("SHA-256 mismatch"), std::string::npos) << given.err;
    EXPECT_NE(given.err.find(wrong), std::string::npos) << given.err;
    EXPECT_FALSE(exists(out()));
    EXPECT_EQ(size_of(out(".part")), size_of(test::shared_path("models/stories260K.gguf")));
    ASSERT_EQ(std::remove(out(".part").c_str()), 0);

    // A server whose ETag claims another hash.
    server_->set_control({{"etag", "\"" + wrong + "\""}});
    const test::CommandResult served = pull(url);
    EXPECT_EQ(served.exit_code, 1);
    EXPECT_NE(served.err.find("the server's ETag"), std::string::npos) << served.err;
    EXPECT_FALSE(exists(out()));
    EXPECT_TRUE(exists(out(".part")));

    // Malformed: refused before anything is read.
    const test::CommandResult bad = pull(url, "--sha256 xyz");
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_NE(bad.err.find("not a SHA-256"), std::string::npos) << bad.err;
}

// With an ETag that is no SHA-256 nothing but the header can tell that the file is short.
TEST_F(Remote, AFileShorterThanItsTensorTableIsRefusedBeforeDownloading) {
    server_->set_control({{"etag", "other"}});
    const test::CommandResult r = pull(server_->url("truncated.gguf"));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("tensor table needs"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("truncated"), std::string::npos) << r.err;
    EXPECT_FALSE(exists(out()));
    EXPECT_FALSE(exists(out(".part")));
    EXPECT_TRUE(ranges().empty());  // only the header was read
}

TEST_F(Remote, TooLittleDiskIsRefusedBeforeStarting) {
    const std::string url = server_->url("stories260K.gguf");
    const test::CommandResult r = pull(url, "--max-bytes 100K");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("more than the 102400 bytes allowed"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("nothing was downloaded"), std::string::npos) << r.err;
    EXPECT_FALSE(exists(out(".part")));

    // A disk that fills up during the download (a file size limit: writes fail with EFBIG):
    // the bytes written stay in the .part, and a later pull finishes it.
    const test::CommandResult full = test::run_command(
        "sh -c \"trap '' XFSZ; ulimit -f 1000; exec timeout 60 " + test::cli_path() + " pull " +
        url + " -o " + out() + " --retry-delay 0.05\"");
    EXPECT_EQ(full.exit_code, 1);
    EXPECT_NE(full.err.find("cannot write"), std::string::npos) << full.err;
    EXPECT_NE(full.err.find("File too large"), std::string::npos) << full.err;
    const uint64_t kept = size_of(out(".part")).value_or(0);
    EXPECT_GT(kept, 0u);
    EXPECT_LT(kept, *size_of(test::shared_path("models/stories260K.gguf")));
    const test::CommandResult resumed = pull(url);
    ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
    EXPECT_NE(resumed.out.find(fmt::format("resumed at byte {}", kept)), std::string::npos)
        << resumed.out;
    EXPECT_EQ(test::read_file(out()),
              test::read_file(test::shared_path("models/stories260K.gguf")));
}

// The free space of the target's file system, on a real small one: a 256 KiB tmpfs mounted in a
// user and mount namespace of its own (unshare), which the download would overflow.
TEST_F(Remote, SmallFileSystemIsRefusedBeforeStarting) {
    const std::string mnt = out_ + "/small";
    ASSERT_EQ(::mkdir(mnt.c_str(), 0755), 0);
    const std::string mount = "unshare -Urm sh -c 'mount -t tmpfs -o size=256k tmpfs " + mnt;
    if (test::run_command(mount + "'").exit_code != 0) {
        GTEST_SKIP() << "cannot mount a tmpfs in a user namespace here (unshare -Urm)";
    }
    const test::CommandResult r = test::run_command(
        mount + " && " + test::cli_path() + " pull " + server_->url("stories260K.gguf") + " -o " +
        mnt + "/model.gguf; status=$?; ls -a " + mnt + "; exit $status'");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("not enough disk space"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("1185376 more bytes"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("nothing was downloaded"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("model.gguf"), std::string::npos) << "written anyway: " << r.out;
    EXPECT_TRUE(ranges().empty());
}

TEST_F(Remote, ModelThatDoesNotFitIsNotDownloaded) {
    const test::CommandResult r = pull(server_->url("stories260K.gguf"), "-c 1000000000");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("not downloaded: does not fit"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--force"), std::string::npos) << r.err;
    EXPECT_FALSE(exists(out(".part")));
    EXPECT_TRUE(ranges().empty());  // only the header was read
}

TEST_F(Remote, CtrlCKeepsThePart) {
    const std::string url = server_->url("stories260K.gguf");
    server_->set_control({{"throttle", 100000}});  // ~12 s for the file
    const std::string log = out_ + "/pull.log";
    std::vector<std::string> args = {test::cli_path(), "pull", url, "-o", out()};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    pid_t pid = -1;
    ASSERT_EQ(::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    // Interrupt once the download has begun.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (size_of(out(".part")).value_or(0) < 100000 &&
           std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_EQ(::kill(pid, SIGINT), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << test::read_text(log);
    EXPECT_EQ(WEXITSTATUS(status), 130) << test::read_text(log);
    EXPECT_NE(test::read_text(log).find("interrupted"), std::string::npos) << test::read_text(log);
    const uint64_t kept = size_of(out(".part")).value_or(0);
    const uint64_t total = *size_of(test::shared_path("models/stories260K.gguf"));
    EXPECT_GE(kept, 100000u);
    EXPECT_LT(kept, total);
    EXPECT_FALSE(exists(out()));

    server_->set_control(json::object());
    const test::CommandResult resumed = pull(url);
    ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
    EXPECT_NE(resumed.out.find(fmt::format("resumed at byte {}", kept)), std::string::npos)
        << resumed.out;
    EXPECT_EQ(test::read_file(out()),
              test::read_file(test::shared_path("models/stories260K.gguf")));
}

}  // namespace
}  // namespace mw
