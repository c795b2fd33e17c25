// The built-in chat templates, for models whose GGUF has no tokenizer.chat_template (or when
// the user names one). Each is written here for this interpreter, named as llama.cpp names its
// built-ins, and renders what the family's published template renders for the same
// conversation (tests/chat_template_test.cpp checks them against ../shared's corpus). Where
// the published template refuses a system message (Gemma, Mistral v1), these put it at the
// start of the first user turn instead, as llama.cpp's built-ins do.
#include "chat/chat_template.h"

namespace mw::chat {

namespace {

constexpr const char* kChatml = R"tmpl(
{%- for message in messages -%}
{{ '<|im_start|>' ~ message.role ~ '\n' ~ message.content ~ '<|im_end|>\n' }}
{%- endfor -%}
{%- if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif -%}
)tmpl";

constexpr const char* kLlama2 = R"tmpl(
{%- if messages and messages[0].role == 'system' -%}
    {%- set system = messages[0].content -%}
    {%- set turns = messages[1:] -%}
{%- else -%}
    {%- set system = none -%}
    {%- set turns = messages -%}
{%- endif -%}
{%- for message in turns -%}
    {%- set text = message.content -%}
    {%- if loop.first and system is not none -%}
        {%- set text = '<<SYS>>\n' ~ system ~ '\n<</SYS>>\n\n' ~ text -%}
    {%- endif -%}
    {%- if message.role == 'user' -%}
        {{ bos_token ~ '[INST] ' ~ text | trim ~ ' [/INST]' }}
    {%- elif message.role == 'assistant' -%}
        {{ ' ' ~ text | trim ~ ' ' ~ eos_token }}
    {%- endif -%}
{%- endfor -%}
)tmpl";

constexpr const char* kLlama3 = R"tmpl(
{%- for message in messages -%}
    {%- if loop.first %}{{ bos_token }}{% endif -%}
    {{ '<|start_header_id|>' ~ message.role ~ '<|end_header_id|>\n\n' ~ message.content | trim ~ '<|eot_id|>' }}
{%- endfor -%}
{%- if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif -%}
)tmpl";

// Mistral 7B v0.1 / Mixtral: " [INST]"-less v1 layout, eos after each answer.
constexpr const char* kMistralV1 = R"tmpl(
{{- bos_token -}}
{%- set pending = namespace(system='') -%}
{%- for message in messages -%}
    {%- if message.role == 'system' -%}
        {%- set pending.system = pending.system ~ message.content ~ '\n\n' -%}
    {%- elif message.role == 'user' -%}
        {{ '[INST] ' ~ pending.system ~ message.content ~ ' [/INST]' }}
        {%- set pending.system = '' -%}
    {%- elif message.role == 'assistant' -%}
        {{ message.content ~ eos_token ~ ' ' }}
    {%- endif -%}
{%- endfor -%}
)tmpl";

// Mistral 7B v0.3: tools before the last user turn, [TOOL_CALLS] and [TOOL_RESULTS]; like the
// published template it has no place for a system message.
constexpr const char* kMistralV3 = R"tmpl(
{{- bos_token -}}
{%- set last_user = messages | selectattr('role', 'equalto', 'user') | list | last -%}
{%- for message in messages -%}
    {%- if message.role == 'user' -%}
        {%- if tools and message == last_user -%}
            {%- set acc = namespace(specs=[]) -%}
            {%- for tool in tools -%}
                {%- set spec = dict(tool.function | items | rejectattr('0', 'equalto', 'return') | list) -%}
                {%- set acc.specs = acc.specs + [{'type': 'function', 'function': spec}] -%}
            {%- endfor -%}
            {{ ' [AVAILABLE_TOOLS] ' ~ acc.specs | tojson ~ ' [/AVAILABLE_TOOLS]' }}
        {%- endif -%}
        {{ ' [INST] ' ~ message.content ~ ' [/INST]' }}
    {%- elif message.role == 'assistant' -%}
        {%- if message.tool_calls -%}
            {%- set acc = namespace(calls=[]) -%}
            {%- for call in message.tool_calls -%}
                {%- set acc.calls = acc.calls + [{'name': call.function.name, 'arguments': call.function.arguments, 'id': call.id}] -%}
            {%- endfor -%}
            {{ ' [TOOL_CALLS] ' ~ acc.calls | tojson ~ ' ' ~ eos_token }}
        {%- elif message.content is defined -%}
            {{ ' ' ~ message.content ~ ' ' ~ eos_token }}
        {%- endif -%}
    {%- elif message.role == 'tool' -%}
        {{ ' [TOOL_RESULTS] {"call_id": "' ~ message.tool_call_id ~ '", "content": ' ~ message.content ~ '} [/TOOL_RESULTS] ' }}
    {%- endif -%}
{%- endfor -%}
)tmpl";

// Mistral v7 (Large 2411) and v7-tekken (Small 3.x): [SYSTEM_PROMPT] blocks; tekken has no
// spaces after the tags.
// clang-format off
#define MW_MISTRAL_V7(SP)                                                                   \
    "{{- bos_token -}}\n"                                                                   \
    "{%- for message in messages -%}\n"                                                     \
    "    {%- if message.role == 'system' -%}\n"                                             \
    "        {{ '[SYSTEM_PROMPT]" SP "' ~ message.content ~ '[/SYSTEM_PROMPT]' }}\n"        \
    "    {%- elif message.role == 'user' -%}\n"                                             \
    "        {{ '[INST]" SP "' ~ message.content ~ '[/INST]' }}\n"                          \
    "    {%- elif message.role == 'assistant' -%}\n"                                        \
    "        {{ '" SP "' ~ message.content ~ eos_token }}\n"                                \
    "    {%- endif -%}\n"                                                                   \
    "{%- endfor -%}\n"
// clang-format on
constexpr const char* kMistralV7 = MW_MISTRAL_V7(" ");
constexpr const char* kMistralV7Tekken = MW_MISTRAL_V7("");
#undef MW_MISTRAL_V7

// Phi-3.5 (Phi-3 mini/medium drop the system turn and always open the answer).
constexpr const char* kPhi3 = R"tmpl(
{%- for message in messages -%}
    {%- if (message.role == 'system' and message.content) or message.role in ['user', 'assistant'] -%}
        {{ '<|' ~ message.role ~ '|>\n' ~ message.content ~ '<|end|>\n' }}
    {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt %}{{ '<|assistant|>\n' }}{% else %}{{ eos_token }}{% endif -%}
)tmpl";

constexpr const char* kPhi4 = R"tmpl(
{%- for message in messages -%}
    {%- if message.role == 'system' -%}
        {{ '<|im_start|>system<|im_sep|>' ~ message.content ~ '<|im_end|>' }}
    {%- elif message.role == 'user' -%}
        {{ '<|im_start|>user<|im_sep|>' ~ message.content ~ '<|im_end|><|im_start|>assistant<|im_sep|>' }}
    {%- elif message.role == 'assistant' -%}
        {{ message.content ~ '<|im_end|>' }}
    {%- endif -%}
{%- endfor -%}
)tmpl";

// Gemma / Gemma 2: "model" turns, trimmed contents; a system message opens the first user turn.
constexpr const char* kGemma = R"tmpl(
{{- bos_token -}}
{%- set pending = namespace(system='') -%}
{%- for message in messages -%}
    {%- if message.role == 'system' -%}
        {%- set pending.system = pending.system ~ message.content | trim ~ '\n\n' -%}
    {%- else -%}
        {%- set role = 'model' if message.role == 'assistant' else message.role -%}
        {{ '<start_of_turn>' ~ role ~ '\n' }}
        {%- if role != 'model' %}{{ pending.system }}{% set pending.system = '' %}{% endif -%}
        {{ message.content | trim ~ '<end_of_turn>\n' }}
    {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt %}{{ '<start_of_turn>model\n' }}{% endif -%}
)tmpl";

// DeepSeek Coder (### Instruction / ### Response, its default system prompt).
constexpr const char* kDeepseek = R"tmpl(
{{- bos_token -}}
{%- if not (messages | selectattr('role', 'equalto', 'system') | list) -%}
    {{ 'You are an AI programming assistant, utilizing the Deepseek Coder model, developed by Deepseek Company, and you only answer questions related to computer science. For politically sensitive questions, security and privacy issues, and other non-computer science questions, you will refuse to answer\n' }}
{%- endif -%}
{%- for message in messages -%}
    {%- if message.role == 'system' -%}
        {{ message.content }}
    {%- elif message.role == 'user' -%}
        {{ '### Instruction:\n' ~ message.content ~ '\n' }}
    {%- else -%}
        {{ '### Response:\n' ~ message.content ~ '\n<|EOT|>\n' }}
    {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt %}{{ '### Response:\n' }}{% endif -%}
)tmpl";

// DeepSeek V2 ("User: ... Assistant:").
constexpr const char* kDeepseek2 = R"tmpl(
{{- bos_token -}}
{%- for message in messages -%}
    {%- if message.role == 'system' -%}
        {{ message.content ~ '\n\n' }}
    {%- elif message.role == 'user' -%}
        {{ 'User: ' ~ message.content ~ '\n\n' }}
    {%- elif message.role == 'assistant' -%}
        {{ 'Assistant: ' ~ message.content ~ eos_token }}
    {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt %}{{ 'Assistant:' }}{% endif -%}
)tmpl";

// DeepSeek V3 / R1: system prompts first, reasoning before </think> dropped from answers.
constexpr const char* kDeepseek3 = R"tmpl(
{{- bos_token -}}
{{- messages | selectattr('role', 'equalto', 'system') | map(attribute='content') | join('\n\n') -}}
{%- set state = namespace(in_tools=false, first_output=true) -%}
{%- for message in messages -%}
    {%- if message.role == 'user' -%}
        {%- set state.in_tools = false -%}
        {{ '<｜User｜>' ~ message.content }}
    {%- elif message.role == 'assistant' and message.tool_calls -%}
        {%- set state.in_tools = false -%}
        {{ '<｜Assistant｜>' ~ (message.content or '') ~ '<｜tool▁calls▁begin｜>' }}
        {%- for call in message.tool_calls -%}
            {%- set args = call.function.arguments if call.function.arguments is string else call.function.arguments | tojson -%}
            {{ ('\n' if not loop.first else '') ~ '<｜tool▁call▁begin｜>' ~ (call.type or 'function') ~ '<｜tool▁sep｜>' ~ call.function.name ~ '\n```json\n' ~ args ~ '\n```<｜tool▁call▁end｜>' }}
        {%- endfor -%}
        {{ '<｜tool▁calls▁end｜><｜end▁of▁sentence｜>' }}
    {%- elif message.role == 'assistant' -%}
        {%- if state.in_tools -%}
            {{ '<｜tool▁outputs▁end｜>' ~ message.content ~ '<｜end▁of▁sentence｜>' }}
            {%- set state.in_tools = false -%}
        {%- else -%}
            {{ '<｜Assistant｜>' ~ message.content.split('</think>')[-1] ~ '<｜end▁of▁sentence｜>' }}
        {%- endif -%}
    {%- elif message.role == 'tool' -%}
        {%- if state.first_output %}{{ '<｜tool▁outputs▁begin｜>' }}{% endif -%}
        {%- set state.in_tools = true -%}
        {%- set state.first_output = false -%}
        {{ '<｜tool▁output▁begin｜>' ~ message.content ~ '<｜tool▁output▁end｜>' }}
    {%- endif -%}
{%- endfor -%}
{%- if state.in_tools %}{{ '<｜tool▁outputs▁end｜>' }}{% endif -%}
{%- if add_generation_prompt and not state.in_tools %}{{ '<｜Assistant｜>' }}{% endif -%}
)tmpl";

// Command-R / R+ without tools: a leading system turn, stripped contents.
constexpr const char* kCommandR = R"tmpl(
{{- bos_token -}}
{%- for message in messages -%}
    {%- if message.role == 'system' and loop.first -%}
        {{ '<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>' ~ message.content ~ '<|END_OF_TURN_TOKEN|>' }}
    {%- elif message.role == 'user' -%}
        {{ '<|START_OF_TURN_TOKEN|><|USER_TOKEN|>' ~ message.content | trim ~ '<|END_OF_TURN_TOKEN|>' }}
    {%- elif message.role == 'assistant' -%}
        {{ '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>' ~ message.content | trim ~ '<|END_OF_TURN_TOKEN|>' }}
    {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt %}{{ '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>' }}{% endif -%}
)tmpl";

// Granite 3.0: available tools first (indented JSON), one line per turn.
constexpr const char* kGranite = R"tmpl(
{%- if tools -%}
    {{ '<|start_of_role|>available_tools<|end_of_role|>\n' }}
    {{- tools | map('tojson', indent=4) | join('\n\n') -}}
    {{ '<|end_of_text|>\n' }}
{%- endif -%}
{%- set roles = {'system': 'system', 'user': 'user', 'assistant': 'assistant', 'tool_response': 'tool_response', 'assistant_tool_call': 'assistant'} -%}
{%- for message in messages -%}
    {%- if message.role in roles -%}
        {{ '<|start_of_role|>' ~ roles[message.role] ~ '<|end_of_role|>' ~ ('<|tool_call|>' if message.role == 'assistant_tool_call' else '') ~ message.content ~ '<|end_of_text|>\n' }}
    {%- endif -%}
    {%- if loop.last and add_generation_prompt %}{{ '<|start_of_role|>assistant<|end_of_role|>' }}{% endif -%}
{%- endfor -%}
)tmpl";

constexpr const char* kZephyr = R"tmpl(
{%- for message in messages -%}
    {%- if message.role in ['user', 'system', 'assistant'] -%}
        {{ '<|' ~ message.role ~ '|>\n' ~ message.content ~ eos_token ~ '\n' }}
    {%- endif -%}
    {%- if loop.last and add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif -%}
{%- endfor -%}
)tmpl";

constexpr const char* kVicuna = R"tmpl(
{%- for message in messages -%}
    {%- if message.role == 'system' -%}
        {{ message.content ~ '\n\n' }}
    {%- elif message.role == 'user' -%}
        {{ 'USER: ' ~ message.content ~ '\n' }}
    {%- else -%}
        {{ 'ASSISTANT: ' ~ message.content ~ '</s>\n' }}
    {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif -%}
)tmpl";

// gpt-oss (OpenAI's harmony format): a system message (identity, date, reasoning effort,
// channels), the developer's instructions and tools as TypeScript, then the turns; reasoning is
// kept only for a tool call not yet answered. Tool schemas: scalars, enums and arrays as the
// published template writes them, any other type as `any`; builtin_tools are left out.
constexpr const char* kGptOss = R"tmpl(
{%- macro ts_type(spec) -%}
    {%- if spec.type == 'array' -%}
        {{- (ts_type(spec['items']) if spec['items'] else 'any') ~ '[]' -}}
        {%- if spec.nullable %}{{ ' | null' }}{% endif -%}
    {%- elif spec.type == 'string' and spec.enum -%}
        {{- '"' ~ spec.enum | join('" | "') ~ '"' -}}
    {%- elif spec.type == 'string' -%}
        {{- 'string' ~ (' | null' if spec.nullable else '') -}}
    {%- elif spec.type in ['number', 'integer'] -%}
        {{- 'number' -}}
    {%- elif spec.type == 'boolean' -%}
        {{- 'boolean' -}}
    {%- else -%}
        {{- 'any' -}}
    {%- endif -%}
{%- endmacro -%}
{{- '<|start|>system<|message|>' ~ (model_identity if model_identity is defined else 'You are ChatGPT, a large language model trained by OpenAI.') ~ '\n' -}}
{{- 'Knowledge cutoff: 2024-06\nCurrent date: ' ~ strftime_now('%Y-%m-%d') ~ '\n\n' -}}
{{- 'Reasoning: ' ~ (reasoning_effort if reasoning_effort is defined else 'medium') ~ '\n\n' -}}
{{- '# Valid channels: analysis, commentary, final. Channel must be included for every message.' -}}
{%- if tools %}{{ "\nCalls to these tools must go to the commentary channel: 'functions'." }}{% endif -%}
{{- '<|end|>' -}}
{%- if messages and messages[0].role in ['system', 'developer'] -%}
    {%- set instructions = messages[0].content -%}
    {%- set turns = messages[1:] -%}
{%- else -%}
    {%- set instructions = '' -%}
    {%- set turns = messages -%}
{%- endif -%}
{%- if instructions or tools -%}
    {{- '<|start|>developer<|message|>' -}}
    {%- if instructions %}{{ '# Instructions\n\n' ~ instructions ~ '\n\n' }}{% endif -%}
    {%- if tools -%}
        {{- '# Tools\n\n## functions\n\nnamespace functions {\n\n' -}}
        {%- for tool in tools -%}
            {%- set fn = tool.function -%}
            {{- '// ' ~ fn.description ~ '\ntype ' ~ fn.name ~ ' = ' -}}
            {%- if fn.parameters and fn.parameters.properties -%}
                {{- '(_: {\n' -}}
                {%- for name, spec in fn.parameters.properties.items() -%}
                    {%- if spec.description %}{{ '// ' ~ spec.description ~ '\n' }}{% endif -%}
                    {{- name ~ ('' if name in (fn.parameters.required or []) else '?') ~ ': ' ~ ts_type(spec) -}}
                    {%- if spec.default is defined -%}
                        {{- ', // default: ' ~ (spec.default if spec.enum else spec.default | tojson) -}}
                    {%- endif -%}
                    {{- ',\n' -}}
                {%- endfor -%}
                {{- '}) => any;\n\n' -}}
            {%- else -%}
                {{- '() => any;\n\n' -}}
            {%- endif -%}
        {%- endfor -%}
        {{- '} // namespace functions' -}}
    {%- endif -%}
    {{- '<|end|>' -}}
{%- endif -%}
{%- set state = namespace(call=none) -%}
{%- for message in turns -%}
    {%- if message.role == 'assistant' and 'tool_calls' in message -%}
        {%- set answered = namespace(found=false) -%}
        {%- for later in turns[loop.index:] -%}
            {%- if later.role == 'assistant' and 'tool_calls' not in later %}{% set answered.found = true %}{% endif -%}
        {%- endfor -%}
        {%- set reasoning = message.content or message.thinking -%}
        {%- if reasoning and not answered.found -%}
            {{- '<|start|>assistant<|channel|>analysis<|message|>' ~ reasoning ~ '<|end|>' -}}
        {%- endif -%}
        {%- set call = message.tool_calls[0].function or message.tool_calls[0] -%}
        {{- '<|start|>assistant to=functions.' ~ call.name ~ '<|channel|>commentary ' -}}
        {{- (call.content_type if call.content_type is defined else 'json') ~ '<|message|>' -}}
        {{- call.arguments | tojson ~ '<|call|>' -}}
        {%- set state.call = call.name -%}
    {%- elif message.role == 'assistant' and loop.last and not add_generation_prompt -%}
        {%- if 'thinking' in message -%}
            {{- '<|start|>assistant<|channel|>analysis<|message|>' ~ message.thinking ~ '<|end|>' -}}
        {%- endif -%}
        {{- '<|start|>assistant<|channel|>final<|message|>' ~ message.content ~ '<|return|>' -}}
    {%- elif message.role == 'assistant' -%}
        {{- '<|start|>assistant<|channel|>final<|message|>' ~ message.content ~ '<|end|>' -}}
        {%- set state.call = none -%}
    {%- elif message.role == 'tool' -%}
        {{- '<|start|>functions.' ~ (state.call or message.name) ~ ' to=assistant<|channel|>commentary<|message|>' -}}
        {{- message.content | tojson ~ '<|end|>' -}}
    {%- elif message.role == 'user' -%}
        {{- '<|start|>user<|message|>' ~ message.content ~ '<|end|>' -}}
    {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt %}{{ '<|start|>assistant' }}{% endif -%}
)tmpl";

// Gemma 4: <|turn>role ... <turn|>, a system turn (with <|think|> when enable_thinking), the
// answer's earlier thought channels dropped, an empty thought channel opening the answer when
// not thinking. Tools are left out (the published template's tool syntax is its own).
constexpr const char* kGemma4 = R"tmpl(
{%- macro answer(text) -%}
    {%- set kept = namespace(text='') -%}
    {%- for part in text.split('<channel|>') -%}
        {%- set kept.text = kept.text ~ (part.split('<|channel>')[0] if '<|channel>' in part else part) -%}
    {%- endfor -%}
    {{- kept.text | trim -}}
{%- endmacro -%}
{%- set thinking = enable_thinking is defined and enable_thinking -%}
{%- set has_system = messages and messages[0].role in ['system', 'developer'] -%}
{{- bos_token -}}
{%- if thinking or has_system -%}
    {{- '<|turn>system\n' ~ ('<|think|>\n' if thinking else '') ~ (messages[0].content | trim if has_system else '') ~ '<turn|>\n' -}}
{%- endif -%}
{%- for message in (messages[1:] if has_system else messages) -%}
    {%- if message.role == 'assistant' -%}
        {{- '<|turn>model\n' ~ answer(message.content) ~ '<turn|>\n' -}}
    {%- else -%}
        {{- '<|turn>' ~ message.role ~ '\n' ~ message.content | trim ~ '<turn|>\n' -}}
    {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{- '<|turn>model\n' ~ ('' if thinking else '<|channel>thought\n<channel|>') -}}
{%- endif -%}
)tmpl";

const std::vector<Builtin> kBuiltins = {
    {"chatml", "ChatML: <|im_start|>role ... <|im_end|> (Qwen, Yi, OpenHermes, ...)", kChatml},
    {"llama2", "Llama 2 chat: [INST] ... [/INST], <<SYS>> system block", kLlama2},
    {"llama3", "Llama 3 instruct: <|start_header_id|>role<|end_header_id|> ... <|eot_id|>",
     kLlama3},
    {"mistral-v1", "Mistral 7B v0.1 / Mixtral: [INST] ... [/INST]", kMistralV1},
    {"mistral-v3", "Mistral 7B v0.3: [INST], [AVAILABLE_TOOLS], [TOOL_CALLS], [TOOL_RESULTS]",
     kMistralV3},
    {"mistral-v7", "Mistral v7 (Large 2411): [SYSTEM_PROMPT] ... [/SYSTEM_PROMPT][INST] ...",
     kMistralV7},
    {"mistral-v7-tekken", "Mistral v7 tekken (Small 3.x): v7 without the spaces", kMistralV7Tekken},
    {"phi3", "Phi-3 / Phi-3.5: <|user|> ... <|end|>", kPhi3},
    {"phi4", "Phi-4: <|im_start|>role<|im_sep|> ... <|im_end|>", kPhi4},
    {"gemma", "Gemma / Gemma 2: <start_of_turn>user|model ... <end_of_turn>", kGemma},
    {"deepseek", "DeepSeek Coder: ### Instruction: / ### Response:", kDeepseek},
    {"deepseek2", "DeepSeek V2: User: ... Assistant:", kDeepseek2},
    {"deepseek3", "DeepSeek V3 / R1: <｜User｜> ... <｜Assistant｜>", kDeepseek3},
    {"command-r", "Command-R / R+: <|START_OF_TURN_TOKEN|><|USER_TOKEN|> ...", kCommandR},
    {"granite", "Granite 3.x: <|start_of_role|>role<|end_of_role|> ... <|end_of_text|>", kGranite},
    {"zephyr", "Zephyr: <|user|> ... </s>", kZephyr},
    {"vicuna", "Vicuna 1.1: USER: ... ASSISTANT: ...", kVicuna},
    {"gemma4", "Gemma 4: <|turn>user|model ... <turn|>, thought channels", kGemma4},
    {"gpt-oss", "gpt-oss (harmony): <|start|>role<|channel|>... <|message|> ... <|end|>", kGptOss},
};

}  // namespace

const std::vector<Builtin>& builtins() {
    return kBuiltins;
}

const Builtin* find_builtin(std::string_view name) {
    for (const Builtin& b : kBuiltins)
        if (b.name == name) return &b;
    return nullptr;
}

}  // namespace mw::chat
