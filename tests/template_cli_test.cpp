// `memwall template`: the render on stdout byte for byte, errors on stderr with a non-zero exit
// naming the template, the line and the construct, and bad files or contexts named.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <ctime>

#include <fstream>

#include "support/test_support.h"

namespace {

struct Files {
    std::string dir = mw::test::temp_dir();
    std::string write(const std::string& name, const std::string& text) const {
        const std::string path = dir + "/" + name;
        std::ofstream(path, std::ios::binary) << text;
        return path;
    }
};

std::string q(const std::string& path) {
    return fmt::format("'{}'", path);
}

mw::test::CommandResult memwall(const std::string& args) {
    return mw::test::run_command(fmt::format("{} template {}", q(mw::test::cli_path()), args));
}

TEST(TemplateCli, RendersByteForByte) {
    Files f;
    const std::string t = f.write("t.jinja",
                                  "{{ bos_token }}{% for m in messages %}{{ m.content }}"
                                  "{% endfor %}{{ '\\x00end' }}\n");
    const std::string ctx = f.write("ctx.json", R"({"bos_token": "<s>", "messages": [
        {"role": "user", "content": "héllo\n"}]})");
    const auto r = memwall(fmt::format("'{}' --context '{}'", t, ctx));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, std::string("<s>héllo\n\0end", 14));  // no newline added or kept
    EXPECT_EQ(r.err, "");
}

TEST(TemplateCli, StrftimeNow) {
    Files f;
    const std::string t = f.write("date.jinja", "{{ strftime_now('%Y') }}");
    const std::string ctx = f.write("ctx.json", "{}");
    auto r = memwall(q(t) + " --context " + q(ctx) + " --strftime-now '26 Jul 2024'");
    EXPECT_EQ(r.out, "26 Jul 2024") << r.err;
    r = memwall(q(t) + " --context " + q(ctx));
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    localtime_r(&now, &tm);
    EXPECT_EQ(r.out, std::to_string(1900 + tm.tm_year)) << r.err;
    r = memwall("--help");
    EXPECT_NE(r.out.find("default: the current"), std::string::npos) << r.out;
}

TEST(TemplateCli, ErrorsNameTemplateLineAndConstruct) {
    Files f;
    const std::string ctx = f.write("ctx.json", R"({"messages": [{"role": "system"}]})");
    const std::string raises =
        f.write("raises.jinja",
                "line 1\n{% for m in messages %}\n{% if m.role == 'system' %}"
                "{{ raise_exception('System role not supported') }}{% endif %}\n"
                "{% endfor %}");
    auto r = memwall(q(raises) + " --context " + q(ctx));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.out, "");
    const std::string expected = fmt::format(
        "template '{}', line 3, in call of raise_exception(): TemplateError: System role not "
        "supported",
        raises);
    EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;

    const std::string syntax = f.write("syntax.jinja", "ok\n\n{% for x in %}{% endfor %}");
    r = memwall(q(syntax) + " --context " + q(ctx));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("syntax.jinja', line 3, in 'for' tag: TemplateSyntaxError"),
              std::string::npos)
        << r.err;

    const std::string undefined = f.write("undef.jinja", "{{ messages[0].content.strip() }}");
    r = memwall(q(undefined) + " --context " + q(ctx));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("line 1, in attribute 'messages[...].content.strip': UndefinedError: "
                         "'dict object' has no attribute 'content'"),
              std::string::npos)
        << r.err;
}

TEST(TemplateCli, BadArgumentsAndFiles) {
    Files f;
    const std::string t = f.write("t.jinja", "{{ 1 }}");
    const std::string bad_json = f.write("bad.json", "{\"messages\": [");
    const std::string array = f.write("array.json", "[1]");
    auto r = memwall(q(t) + " --context " + q(bad_json));
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find(fmt::format("{}: the context", bad_json)), std::string::npos) << r.err;
    r = memwall(q(t) + " --context " + q(array));
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("must be a JSON object"), std::string::npos) << r.err;
    r = memwall(q(f.dir + "/missing.jinja") + " --context " + q(array));
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("missing.jinja: cannot read the template"), std::string::npos) << r.err;
    r = memwall(q(t));
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("--context"), std::string::npos) << r.err;
    r = memwall("--list");
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_NE(r.out.find("chatml\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("llama3\n"), std::string::npos) << r.out;
}

}  // namespace
