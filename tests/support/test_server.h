// The HTTP server in-process on loopback for tests (stories260K unless told another model under
// ../shared), and a JSON POST to it.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include <string>
#include <thread>

#include "memwall.h"
#include "support/test_support.h"

namespace mw::test {

struct Server {
    mw_model* model = nullptr;
    mw_server* server = nullptr;
    std::thread thread;
    int port = 0;

    explicit Server(mw_server_params sp, uint32_t n_seq = 4, uint32_t n_ctx = 1024,
                    const std::string& model_path = "models/stories260K.gguf") {
        // A relative path is in ../shared; an absolute one (a test's own file) is taken as is.
        const std::string path =
            model_path.starts_with('/') ? model_path : mw::test::shared_path(model_path);
        EXPECT_EQ(mw_model_load(path.c_str(), nullptr, &model), MW_OK) << mw_last_error();
        mw_context_params cp = mw_context_default_params();
        cp.n_ctx = n_ctx;
        cp.n_seq_max = n_seq;
        cp.n_threads = 2;
        sp.port = 0;
        if (!sp.chat_template) sp.chat_template = "chatml";
        EXPECT_EQ(mw_server_create(model, &cp, &sp, &server), MW_OK) << mw_last_error();
        port = mw_server_port(server);
        thread = std::thread([this] { mw_server_run(server); });
    }
    Server() : Server(mw_server_default_params()) {}
    ~Server() {
        mw_server_stop(server, 1.0);
        if (thread.joinable()) thread.join();
        mw_server_free(server);
        mw_model_free(model);
    }
    httplib::Client client() const {
        httplib::Client c("127.0.0.1", port);
        c.set_read_timeout(60, 0);
        return c;
    }
};

inline nlohmann::json post(const Server& s, const std::string& path, const std::string& body,
                           int* status, const httplib::Headers& headers = {}) {
    auto c = s.client();
    auto res = c.Post(path.c_str(), headers, body, "application/json");
    if (!res) {
        *status = -1;
        return {};
    }
    *status = res->status;
    return nlohmann::json::parse(res->body, nullptr, false);
}

}  // namespace mw::test
