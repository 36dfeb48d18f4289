// The JSON reader of shard headers and the index (model/json_sax.h) against nlohmann's, event by
// event: the same documents accepted, the same callbacks in the same order with the same values, on
// hand-picked edge cases and on many deterministic mutations of real headers.
#include "json_sax.h"
#include "splitmix64.h"

#include <nlohmann/json.hpp>

#include <QTest>

#include <string>
#include <vector>

using namespace atlas;

namespace {

// Records every callback as a line of text; accepts everything.
struct Recorder
{
    using json = nlohmann::json;
    std::vector<std::string> events;
    bool null() { return add("null"); }
    bool boolean(bool b) { return add(b ? "true" : "false"); }
    bool number_integer(std::int64_t v) { return add("int " + std::to_string(v)); }
    bool number_unsigned(std::uint64_t v) { return add("uint " + std::to_string(v)); }
    bool number_float(double v, const std::string &text)
    {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.17g", v);
        (void)text;
        return add(std::string("float ") + buf);
    }
    bool string(std::string &s) { return add("string " + s); }
    bool binary(json::binary_t &) { return add("binary"); }
    bool key(std::string &s) { return add("key " + s); }
    bool start_object(std::size_t) { return add("{"); }
    bool end_object() { return add("}"); }
    bool start_array(std::size_t) { return add("["); }
    bool end_array() { return add("]"); }
    bool parse_error(std::size_t, const std::string &, const nlohmann::detail::exception &) { return false; }
    bool parse_error(std::size_t, const std::string &) { return false; }
    bool add(std::string e)
    {
        events.push_back(std::move(e));
        return true;
    }
};

struct Outcome
{
    bool accepted = false;
    std::vector<std::string> events;
};

Outcome ours(const std::string &text)
{
    Recorder r;
    const bool ok = parseJson(text, r);
    return {ok, ok ? r.events : std::vector<std::string>{}};
}

Outcome theirs(const std::string &text)
{
    Recorder r;
    const bool ok = nlohmann::json::sax_parse(text, &r, nlohmann::json::input_format_t::json, true);
    return {ok, ok ? r.events : std::vector<std::string>{}};
}

const char *const kHeader =
    R"({"__metadata__":{"format":"pt"},"model.layers.0.mlp.experts.7.down_proj.weight":{"dtype":"F8_E4M3",)"
    R"("shape":[6144,2048],"data_offsets":[0,12582912]},"b\u00e9\ud83d\ude00":{"dtype":"F32","shape":[],)"
    R"("data_offsets":[12582912,12582916]},"x":[1.5e3,-0,-7,18446744073709551615,18446744073709551616,true,null]})";

} // namespace

class TestJson : public QObject
{
    Q_OBJECT

private slots:
    void sameAsNlohmann_data()
    {
        QTest::addColumn<QByteArray>("text");
        const char *const docs[] = {
            kHeader, "{}", "[]", " {\"a\" : [ ] } \n", "{\"a\":1,}", "[1,]", "[1 2]", "{\"a\" 1}", "{1:2}", "01",
            "-", "1.", "1e", "1e+", ".5", "1.5e-7", "-0.0", "\"\\u12\"", "\"\\x\"", "\"a\nb\"", "\"\\ud800\"",
            "\"\\udc00\"", "\"\\ud800\\u0041\"", "tru", "nul", "{} {}", "", "   ", "{\"a\":\"\xC3\"}",
            "{\"a\":\"\xE2\x82\xAC\"}", "{\"\xFF\":1}", "[[[[[[[[[[]]]]]]]]]]", "[[[", "9223372036854775808",
            "-9223372036854775809", "1E400", "-1e-400", "\"\\/\\b\\f\\n\\r\\t\\\\\\\"\"", "[1,{\"a\":[true,false]}]",
        };
        for (const char *d : docs)
            QTest::newRow(d[0] ? d : "(empty)") << QByteArray(d);
    }

    void sameAsNlohmann()
    {
        QFETCH(QByteArray, text);
        const std::string s = text.toStdString();
        const Outcome a = ours(s), b = theirs(s);
        QCOMPARE(a.accepted, b.accepted);
        QCOMPARE(a.events, b.events);
    }

    void mutationsOfAHeader()
    {
        // Deterministic mutations (byte flips, deletions, duplications, insertions of JSON's own
        // characters): both readers agree on every one.
        std::uint64_t state = 2026;
        const std::string base = kHeader;
        const std::string alphabet = "{}[]:,\"\\ u0123456789eE.-+tfnrl\xC3\xA9\x80";
        int accepted = 0;
        for (int i = 0; i < 20000; ++i) {
            std::string s = base;
            const int edits = 1 + int(splitmix64(state) % 3);
            for (int k = 0; k < edits && !s.empty(); ++k) {
                const std::size_t at = splitmix64(state) % s.size();
                switch (splitmix64(state) % 4) {
                case 0: s[at] = alphabet[splitmix64(state) % alphabet.size()]; break;
                case 1: s.erase(at, 1 + splitmix64(state) % 4); break;
                case 2: s.insert(at, s.substr(at, 1 + splitmix64(state) % 8)); break;
                default: s.insert(at, 1, alphabet[splitmix64(state) % alphabet.size()]); break;
                }
            }
            const Outcome a = ours(s), b = theirs(s);
            if (a.accepted != b.accepted || a.events != b.events)
                QFAIL(("the readers disagree on: " + s).c_str());
            accepted += a.accepted;
        }
        QVERIFY(accepted > 100); // the mutations also reach documents that parse
    }

    void deepNestingDoesNotRecurse()
    {
        const std::string deep = std::string(1'000'000, '[') + std::string(1'000'000, ']');
        Recorder r;
        QVERIFY(parseJson(deep, r));
        QCOMPARE(r.events.size(), std::size_t(2'000'000));
    }
};

QTEST_GUILESS_MAIN(TestJson)
#include "tst_json.moc"
