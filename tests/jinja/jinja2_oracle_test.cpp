// Jinja2 itself (Debian's python3-jinja2, run through ../shared/templates/render.py, the
// transformers environment) is the oracle: every shared template and a set of snippets
// that pin down Jinja2's semantics render to the same bytes in hearth, or raise in both.
// A template added to ../shared/templates is checked without a new expected file.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "jinja/template_cases.h"

namespace hearth::jinja::testing {
namespace {

// The first Python that has Jinja2: python3 on PATH, else Debian's /usr/bin/python3
// (where python3-jinja2 installs it); empty when none has.
const std::string& python_with_jinja2() {
  static const std::string python = [] {
    for (const char* p : {"python3", "/usr/bin/python3"}) {
      const std::string cmd = std::string(p) + " -c 'import jinja2' >/dev/null 2>&1";
      if (std::system(cmd.c_str()) == 0) return std::string(p);
    }
    return std::string();
  }();
  return python;
}

bool have_jinja2() {
  return !python_with_jinja2().empty();
}

#define REQUIRE_JINJA2()                                                                      \
  if (!have_jinja2()) {                                                                       \
    GTEST_SKIP() << "python3-jinja2 is not installed (scripts/install-deps.sh installs it); " \
                    "the Jinja2 oracle comparison is skipped";                                \
  }

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  return out + "'";
}

// Jinja2's renders through render.py's own environment (its render_all), for many
// templates in one Python process: {job name: {case: text | {"error": ...}}}.
struct OracleJob {
  std::string name;
  std::string template_path;
  std::string cases_path;
};

nlohmann::ordered_json run_oracle(const std::vector<OracleJob>& jobs, const std::string& dir) {
  std::filesystem::create_directories(dir);
  const std::string driver = dir + "/oracle_driver.py";
  std::ofstream(driver)
      << "import json, sys\n"
         "sys.dont_write_bytecode = True\n"
         "sys.path.insert(0, sys.argv[1])\n"
         "import render\n"
         "out = {}\n"
         "for job in json.load(open(sys.argv[2], encoding='utf-8')):\n"
         "    with open(job['cases'], encoding='utf-8') as f:\n"
         "        cases = json.load(f)\n"
         "    out[job['name']] = render.render_all(job['template'], cases)\n"
         "sys.stdout.buffer.write(json.dumps(out, ensure_ascii=False).encode())\n";
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& j : jobs) {
    list.push_back({{"name", j.name}, {"template", j.template_path}, {"cases", j.cases_path}});
  }
  const std::string jobs_path = dir + "/oracle_jobs.json";
  std::ofstream(jobs_path) << list.dump();
  const std::string cmd = python_with_jinja2() + " " + shell_quote(driver) + " " +
                          shell_quote(templates_dir()) + " " + shell_quote(jobs_path) +
                          " 2>/dev/null";
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
    pclose(p);
  }
  return nlohmann::ordered_json::parse(out, nullptr, false);
}

// One shared template's Jinja2 renders (ctest runs each test in its own process).
nlohmann::ordered_json oracle_template(const std::string& name) {
  return run_oracle(
      {{name, templates_dir() + "/" + name + ".jinja", templates_dir() + "/conversations.json"}},
      ::testing::TempDir() + "/hearth_jinja_oracle_" + std::to_string(getpid()));
}

class OracleTemplate : public ::testing::TestWithParam<std::string> {};

TEST_P(OracleTemplate, RendersLikeJinja2) {
  REQUIRE_JINJA2();
  const std::string name = GetParam();
  const auto all = oracle_template(name);
  ASSERT_TRUE(all.is_object() && all.contains(name)) << "render.py failed on " << name;
  const auto& want_json = all[name];
  const auto diffs = differences(outcomes_from_json(want_json), render_all(name, conversations()));
  for (const auto& d : diffs) ADD_FAILURE() << name << " / " << d;
}

std::string param_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string n;
  for (char c : info.param) n.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return n;
}

INSTANTIATE_TEST_SUITE_P(Templates, OracleTemplate, ::testing::ValuesIn(template_names()),
                         param_name);

// Snippets: each is rendered over the snippet cases below by Jinja2 and by hearth.
struct Snippet {
  const char* name;
  const char* source;
};

const Snippet kSnippets[] = {
    {"str_of_values",
     "{{ n }}|{{ true }}|{{ false }}|{{ x }}|{{ f }}|{{ l }}|{{ d }}|{{ (1, 'a') }}|{{ (1,) }}|"
     "{{ quote }}|{{ [quote, 'a\\nb', 'tab\\t', u8] }}|{{ {'k': none, 1: 2.0} }}|{{ undefined_x "
     "}}"},
    {"float_repr",
     "{{ 1e16 }} {{ 1e15 }} {{ 0.1 + 0.2 }} {{ 1 / 3 }} {{ 2.0 }} {{ 1e-5 }} {{ 0.0001 }} "
     "{{ 10 / 2 }} {{ -0.5 }} {{ 123456789.123 }} {{ 3 * 1.1 }} {{ 2 ** 0.5 }} {{ 1e300 * 10 }}"},
    {"arithmetic",
     "{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 2 ** 10 }} {{ 7.5 // 2 }} "
     "{{ -7.5 % 2 }} {{ 'ab' * 3 }} {{ [1] * 2 }} {{ 1 + true }} {{ x - 10 }} {{ -x }}"},
    {"tojson_variants",
     "{{ d | tojson }}\n{{ d | tojson(indent=2) }}\n{{ d | tojson(sort_keys=true) }}\n"
     "{{ u8 | tojson }}|{{ u8 | tojson(ensure_ascii=true) }}|{{ 'a\"b\\\\c\\n\\x01\\x7f' | tojson "
     "}}\n"
     "{{ l | tojson(separators=(',', ':')) }}|{{ {} | tojson(indent=2) }}|{{ [] | tojson }}|"
     "{{ f | tojson }}|{{ n | tojson }}|{{ {'a': {'b': [1, {}]}} | tojson(indent=0) }}"},
    {"loop_vars",
     "{% for i in l %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
     "{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.previtem }}{{ loop.nextitem }}"
     "{{ loop.cycle('a', 'b') }};{% endfor %}"
     "{% for i in [1, 1, 2, 2, 1] %}{% if loop.changed(i) %}{{ i }}{% endif %}{% endfor %}"},
    {"loop_controls",
     "{% for i in range(10) %}{% if i is even %}{% continue %}{% endif %}{% if i > 6 %}{% break "
     "%}{% endif %}{{ i }}{% endfor %}|{% for i in [] %}x{% else %}empty{% endfor %}|"
     "{% for i in range(6) if i is odd %}{{ loop.index }}/{{ loop.length }}:{{ i }} {% endfor %}"},
    {"scoping",
     "{% set a = 1 %}{% for i in [1, 2] %}{{ a }}{% set a = a + 10 %}{{ a }},{% endfor %}{{ a }}"
     "{% if true %}{% set b = 5 %}{% endif %}{{ b }}"
     "{% set ns = namespace(c=0) %}{% for i in l %}{% set ns.c = ns.c + i %}{% endfor %}{{ ns.c "
     "}}"},
    {"macros",
     "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}"
     "{{ greet('a') }} {{ greet('b', '?') }} {{ greet(punct='.', name='c') }} {{ greet() }}"
     "{% macro rec(n) %}{% if n > 0 %}{{ n }}{{ rec(n - 1) }}{% endif %}{% endmacro %}{{ rec(4) }}"
     "{% macro wrap() %}[{{ caller() }}]{% endmacro %}{% call wrap() %}inner {{ x }}{% endcall %}"},
    {"set_block_and_filter_block",
     "{% set body %}  Some {{ x }} text  {% endset %}[{{ body }}]{% set up | upper %}abc{% endset "
     "%}{{ up }}{% filter upper %}shout {{ s }}{% endfilter %}{% with y = x + 1 %}{{ y }}{% "
     "endwith "
     "%}"},
    {"whitespace_control",
     "a  \n  {% if true %}\n  b\n  {% endif %}\n  c {{- ' d ' -}} e\n  {%- if true +%}\n f\n"
     "  {%+ if true %}g{% endif %}\n  {# comment #}\n  h {#- trimmed -#}  i\n{% raw %}  {{ not "
     "parsed }}\n{% endraw %}\nend\n\n"},
    {"string_escapes",
     "{{ 'a\\nb' }}|{{ \"q'q\" }}|{{ 'it\\'s' }}|{{ '\\x41\\u00e9\\U0001F600' }}|{{ '\\d\\w' }}|"
     "{{ 'line\\\ncontinued' }}|{{ 'tab\\there' }}|{{ 'adj' 'acent' }}"},
    {"string_methods",
     "{{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip() }}|{{ s.split() }}|{{ 'a,b,,c'.split(',') }}|"
     "{{ 'a b c'.split(' ', 1) }}|{{ 'a b c'.rsplit(' ', 1) }}|{{ 'xxaxx'.strip('x') }}|"
     "{{ 'Hello'.startswith('He') }}{{ 'Hello'.endswith(('x', 'lo')) }}|{{ 'aaa'.replace('a', 'b', "
     "2) "
     "}}|{{ 'abc'.upper() }}{{ 'ABC'.lower() }}|{{ 'hello world'.title() }}|{{ "
     "'hELLO'.capitalize() "
     "}}|{{ 'abcabc'.find('c') }}{{ 'abc'.count('b') }}|{{ '-'.join(['a', 'b']) }}|"
     "{{ '{} and {}'.format(1, 'two') }}|{{ 'a\\nb\\r\\nc'.splitlines() }}|{{ u8.upper() }}"},
    {"slicing",
     "{{ l[1:] }}{{ l[:-1] }}{{ l[::-1] }}{{ l[::2] }}{{ u8[1:4] }}{{ u8[-3:] }}{{ u8[::-1] }}"
     "{{ 'abcdef'[1:5:2] }}{{ l[10:] }}{{ l[-10:1] }}{{ u8[0] }}{{ l[-1] }}"},
    {"filters_text",
     "{{ s | trim }}|{{ s | upper }}|{{ s | lower }}|{{ u8 | length }}|{{ l | length }}|"
     "{{ 'hello world' | title }}|{{ 'hello' | capitalize }}|{{ 'a-b' | replace('-', '+') }}|"
     "{{ 'x' | center(7) }}|{{ 'one two three' | wordcount }}|{{ '<a href=\"x\">&\\'' | escape }}|"
     "{{ 'line1\\nline2\\n\\nline4' | indent(2) }}|{{ 'a\\nb' | indent(3, first=true) }}|"
     "{{ 'a\\n\\nb' | indent(2, blank=true) }}|{{ '%s is %d' | format('x', 3) }}|"
     "{{ 'a long sentence here' | truncate(9, leeway=0) }}|{{ n | string }}|{{ x | string }}"},
    {"filters_lists",
     "{{ l | sort }}|{{ l | sort(reverse=true) }}|{{ l | first }}{{ l | last }}|{{ l | join('-') "
     "}}|"
     "{{ l | sum }}|{{ l | min }}{{ l | max }}|{{ l | reverse | list }}|{{ 'abc' | list }}|"
     "{{ [1, 2, 1, 3] | unique | list }}|{{ ['B', 'a', 'b'] | unique | list }}|"
     "{{ range(7) | batch(3) | list }}|{{ l | map('string') | join }}|{{ d | dictsort }}|"
     "{{ d | items | list }}|{{ [3, 'x'] | select('number') | list }}|"
     "{{ [1, 2, 3, 4] | reject('odd') | list }}|{{ d | list }}|{{ l | select | list }}"},
    {"filters_attr",
     "{% set people = [{'name': 'b', 'age': 3}, {'name': 'a', 'age': 5}, {'name': 'c'}] %}"
     "{{ people | map(attribute='name') | join(',') }}|{{ people | selectattr('age') | list | "
     "length }}|"
     "{{ people | rejectattr('age', 'defined') | map(attribute='name') | list }}|"
     "{{ people | selectattr('age', 'defined') | selectattr('age', 'gt', 3) | "
     "map(attribute='name') "
     "| first }}|"
     "{{ people | sort(attribute='name') | map(attribute='name') | join }}|"
     "{{ people | join(', ', attribute='name') }}|{{ people | map(attribute='age', default=0) | "
     "list }}|"
     "{{ messages | selectattr('role', 'equalto', 'user') | list | length }}"},
    {"filters_numbers",
     "{{ '42' | int }} {{ '4.7' | int }} {{ 'x' | int }} {{ 'x' | int(7) }} {{ (f / 1e10) | int }} "
     "{{ '2.5' | float }} {{ x | float }} {{ 2.567 | round(2) }} {{ 2.5 | round }} {{ 3.5 | round "
     "}} "
     "{{ 2.1 | round(0, 'ceil') }} {{ -3 | abs }} {{ undefined_y | default('dflt') }} "
     "{{ '' | default('empty', true) }} {{ n | default('kept') }} {{ '0x1A' | int(0, 16) }}"},
    {"tests",
     "{{ x is defined }}{{ nope is defined }}{{ n is none }}{{ s is string }}{{ d is mapping }}"
     "{{ l is iterable }}{{ x is number }}{{ true is number }}{{ f is float }}{{ x is integer }}"
     "{{ true is boolean }}{{ l is sequence }}{{ 6 is divisibleby 3 }}{{ 3 is odd }}"
     "{{ 2 is in l }}{{ x is sameas 3 }}{{ n is sameas none }}{{ 'abc' is lower }}"
     "{{ x is eq 3 }}{{ x is ne 3 }}{{ x is gt 1 }}{{ range is callable }}{{ nope is undefined }}"
     "{{ s is not none }}{{ 'upper' is filter }}{{ 'odd' is test }}{{ true is true }}"},
    {"operators",
     "{{ 1 < x < 5 }}{{ 'b' > 'a' }}{{ [1, 2] < [1, 3] }}{{ 'a' in 'cat' }}{{ 2 in l }}"
     "{{ 'b' in d }}{{ 'z' not in d }}{{ 1 == 1.0 }}{{ 'a' ~ 1 ~ none ~ nope }}{{ x if x > 2 }}"
     "{{ 'y' if false }}{{ 0 or 'fallback' }}{{ 'first' and 'second' }}{{ not n }}"
     "{{ (1, 2) == (1, 2) }}{{ [1] == (1,) }}{{ d == {'b': 1, 'a': [1, 'x', none, true]} }}"},
    {"dict_methods",
     "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}|{{ d.keys() | list }}|"
     "{{ d.values() | list }}|{{ d.get('b') }}{{ d.get('zz') }}{{ d.get('zz', 7) }}|{{ d.b }}"
     "{{ d['a'][1] }}|{{ messages[0].role }}{{ messages[0]['content'] }}"},
    {"strftime",
     "{{ strftime_now('%Y-%m-%d') }} {{ strftime_now('%d %b %Y') }} "
     "{{ strftime_now('%A %B %j %H:%M:%S') }}"},
    {"chat_like",
     "{{ bos_token }}{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content | trim }}"
     "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"},
    {"generation_tag",
     "{% for m in messages %}{% if m.role == 'user' %}U:{{ m.content }}{% else %}"
     "{% generation %}A:{{ m.content }}{% endgeneration %}{% endif %}\n{% endfor %}"},
    {"lstrip_edge_cases",
     "  {{ x }}\n\t{% if true %}tab{% endif %}\n  {#- c #}\n x {% if true -%}\n  y\n"
     "{%- endif %}\n{% for i in l %}\n  {{ i }}\n{% endfor %}\n{%+ if true %}keep{% endif %}"},
    {"nested_loops_and_namespace",
     "{% set ns = namespace(found=false, idx=-1) %}{% for m in messages %}{% for c in m.content %}"
     "{% if c == 'l' and not ns.found %}{% set ns.found = true %}{% set ns.idx = loop.index0 %}"
     "{% endif %}{% endfor %}{{ loop.index }}{% endfor %}{{ ns.found }}{{ ns.idx }}"},
    {"err_undefined_attr", "{{ nope.attr }}"},
    {"err_call_undefined", "{{ nope() }}"},
    {"unknown_filter_not_reached", "{% if false %}{{ x | no_such_filter }}{% endif %}ok"},
    {"err_unknown_test", "{% if x is no_such_test %}{% endif %}"},
    {"err_unclosed", "{% if true %}never closed"},
    {"err_break_outside", "{% break %}"},
    {"err_range_too_big", "{{ range(1000000) | length }}"},
    {"err_append", "{% set a = [] %}{{ a.append(1) }}"},
    {"err_raise", "{{ raise_exception('custom failure') }}"},
    {"err_concat_none", "{{ 'a' + n }}"},
    {"err_compare", "{{ 1 < 'a' }}"},
    {"err_div_zero", "{{ 1 // 0 }}"},
    {"err_set_non_namespace", "{% set d.x = 1 %}"},
    {"err_unknown_tag", "{% frobnicate %}"},
    {"err_include", "{% include 'x.html' %}"},
    {"err_items_of_list", "{{ l | items | list }}"},
    {"err_unknown_filter_top", "{{ x | no_such_filter }}"},
    {"err_unknown_filter_in_if", "{% if true %}{{ x | no_such_filter }}{% endif %}"},
    {"err_macro_too_many_args", "{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}"},
    {"err_tojson_undefined", "{{ nope | tojson }}"},
};

nlohmann::ordered_json snippet_cases() {
  return nlohmann::ordered_json::parse(R"([
    {"name": "basic", "add_generation_prompt": true,
     "messages": [{"role": "user", "content": "  Hello, World  "}],
     "extra": {"x": 3, "f": 2.5, "s": "  Ab c\té  ", "l": [3, 1, 2],
               "d": {"b": 1, "a": [1, "x", null, true]}, "n": null,
               "u8": "héllo wörld €😀", "quote": "it's \"q\""}},
    {"name": "other", "add_generation_prompt": false,
     "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "<|im_end|>"}],
     "extra": {"x": -7, "f": 1e20, "s": "x", "l": [10, 20], "d": {"a": 2, "b": 1}, "n": 0,
               "u8": "日本語テキスト", "quote": "'"}}
  ])");
}

TEST(OracleSnippets, RenderLikeJinja2) {
  REQUIRE_JINJA2();
  const std::string dir = ::testing::TempDir() + "/hearth_jinja_snippets";
  std::filesystem::create_directories(dir);
  const auto cases = snippet_cases();
  const std::string conv_path = dir + "/cases.json";
  std::ofstream(conv_path) << cases.dump();
  std::vector<OracleJob> jobs;
  for (const auto& sn : kSnippets) {
    const std::string path = dir + "/" + sn.name + ".jinja";
    std::ofstream(path, std::ios::binary) << sn.source;
    jobs.push_back({sn.name, path, conv_path});
  }
  const auto oracle = run_oracle(jobs, dir);
  ASSERT_TRUE(oracle.is_object()) << "render.py failed on the snippets";
  int checked = 0;
  for (const auto& sn : kSnippets) {
    ASSERT_TRUE(oracle.contains(sn.name)) << sn.name;
    const auto want = outcomes_from_json(oracle[sn.name]);
    const auto got = render_all_at(dir, sn.name, cases);
    for (const auto& d : differences(want, got)) {
      ADD_FAILURE() << "snippet " << sn.name << " / " << d;
    }
    // Error snippets must raise in Jinja2 too, or the snippet tests nothing.
    if (std::string(sn.name).rfind("err_", 0) == 0) {
      for (const auto& [c, o] : want) EXPECT_FALSE(o.ok) << sn.name << " / " << c;
    }
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(std::size(kSnippets)));
}

}  // namespace
}  // namespace hearth::jinja::testing
