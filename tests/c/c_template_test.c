/* The chat-template calls of the C API from plain C11: rendering a template with a JSON
 * context, applying a built-in to a conversation, buffers too small, errors with messages. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "memwall.h"

int main(void) {
    const char* tmpl =
        "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content | trim }}"
        "{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}";
    char* out = NULL;
    size_t len = 0;
    mw_status st =
        mw_template_render(tmpl, strlen(tmpl), "c.jinja",
                           "{\"bos_token\": \"<s>\", \"add_generation_prompt\": true, "
                           "\"messages\": [{\"role\": \"user\", \"content\": \"  hi  \"}]}",
                           NULL, &out, &len);
    CHECK(st == MW_OK, "%s", mw_last_error());
    if (st == MW_OK) {
        CHECK(strcmp(out, "<s><user>hi<assistant>") == 0, "got %s", out);
        CHECK(len == strlen(out), "len %zu", len);
        mw_free_string(out);
    }

    /* A template that raises: an error naming the template, the line and the construct. */
    const char* raises = "a\n{{ raise_exception('nope') }}";
    out = NULL;
    st = mw_template_render(raises, strlen(raises), "r.jinja", "{}", "26 Jul 2024", &out, &len);
    CHECK(st == MW_ERR_INVALID_ARGUMENT, "status %d", (int)st);
    CHECK(out == NULL, "out set on failure");
    CHECK(
        strstr(mw_last_error(), "template 'r.jinja', line 2, in call of raise_exception()") != NULL,
        "%s", mw_last_error());

    /* A built-in applied to a conversation, without a model. */
    const mw_chat_message chat[] = {{"system", "Be brief."}, {"user", "Hello"}};
    char buf[512];
    int32_t n = mw_chat_apply_template(NULL, "chatml", chat, 2, true, buf, (int32_t)sizeof buf);
    const char* expected =
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n"
        "<|im_start|>assistant\n";
    CHECK(n == (int32_t)strlen(expected), "n %d: %s", n, mw_last_error());
    CHECK(strcmp(buf, expected) == 0, "got %s", buf);
    char tiny[8];
    CHECK(mw_chat_apply_template(NULL, "chatml", chat, 2, true, tiny, (int32_t)sizeof tiny) == n,
          "length when the buffer is too small");
    CHECK(strlen(tiny) == sizeof tiny - 1, "truncated and terminated");
    CHECK(mw_chat_apply_template(NULL, NULL, chat, 2, true, buf, (int32_t)sizeof buf) == -1,
          "no model and no template must fail");
    CHECK(strlen(mw_last_error()) > 0, "an error message");

    /* Tools through the JSON request. */
    out = NULL;
    st = mw_chat_render(NULL, "{{ tools[0].name }}:{{ messages | length }}",
                        "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
                        "\"tools\": [{\"name\": \"search\"}]}",
                        &out, &len);
    CHECK(st == MW_OK, "%s", mw_last_error());
    if (st == MW_OK) {
        CHECK(strcmp(out, "search:1") == 0, "got %s", out);
        mw_free_string(out);
    }

    const char* names[64];
    const int32_t n_builtins = mw_chat_builtin_templates(names, 64);
    CHECK(n_builtins >= 15, "%d built-ins", n_builtins);
    int found = 0;
    for (int32_t i = 0; i < n_builtins && i < 64; ++i) found += strcmp(names[i], "llama3") == 0;
    CHECK(found == 1, "llama3 listed");
    char* info = mw_chat_template_info(NULL, "gemma");
    CHECK(info != NULL && strstr(info, "\"origin\":\"builtin\"") != NULL, "%s",
          info ? info : mw_last_error());
    mw_free_string(info);

    if (failures) fprintf(stderr, "%d failures\n", failures);
    return failures ? 1 : 0;
}
