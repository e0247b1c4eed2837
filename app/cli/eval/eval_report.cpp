#include "eval/eval_report.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "app/json_writer.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/printable.hpp"

namespace mnemo::cli {

namespace {

struct Tally {
    std::string set;
    int64_t items = 0;
    int64_t exact = 0;
    int64_t contains = 0;

    void add(const EvalOutcome& o) {
        ++items;
        exact += o.score.exact ? 1 : 0;
        contains += o.score.contains ? 1 : 0;
    }
    static double fraction(int64_t n, int64_t of) { return of ? static_cast<double>(n) / static_cast<double>(of) : 0.0; }
};

// One tally per set, in the order the sets first appear.
std::vector<Tally> tally_sets(const std::vector<EvalOutcome>& outcomes) {
    std::vector<Tally> sets;
    for (const EvalOutcome& o : outcomes) {
        Tally* t = nullptr;
        for (Tally& s : sets)
            if (s.set == o.item->set) t = &s;
        if (t == nullptr) {
            sets.push_back({o.item->set});
            t = &sets.back();
        }
        t->add(o);
    }
    return sets;
}

Tally tally_all(const std::vector<EvalOutcome>& outcomes) {
    Tally all{"all"};
    for (const EvalOutcome& o : outcomes) all.add(o);
    return all;
}

void write_counts(app::JsonWriter& w, const Tally& t) {
    w.key("items").value(t.items);
    w.key("exact").value(t.exact);
    w.key("contains").value(t.contains);
    w.key("exact_match").value(Tally::fraction(t.exact, t.items));
    w.key("contains_match").value(Tally::fraction(t.contains, t.items));
}

}  // namespace

std::string eval_table(const std::vector<EvalOutcome>& outcomes) {
    std::vector<Tally> rows = tally_sets(outcomes);
    rows.push_back(tally_all(outcomes));
    // Set names come from the questions file and go to the terminal: escaped, and cut to a column.
    for (Tally& t : rows) t.set = printable(t.set, 64);
    size_t width = 3;
    for (const Tally& t : rows) width = std::max(width, t.set.size());
    std::string out;
    char line[512];
    std::snprintf(line, sizeof line, "%-*s  %7s  %7s  %10s\n", static_cast<int>(width), "set", "items", "exact %",
                  "contains %");
    out += line;
    for (const Tally& t : rows) {
        std::snprintf(line, sizeof line, "%-*s  %7lld  %7.1f  %10.1f\n", static_cast<int>(width), t.set.c_str(),
                      static_cast<long long>(t.items), 100.0 * Tally::fraction(t.exact, t.items),
                      100.0 * Tally::fraction(t.contains, t.items));
        out += line;
    }
    return out;
}

std::string eval_report_json(const EvalRun& run, const std::vector<EvalOutcome>& outcomes) {
    int64_t prompt_tokens = 0, generated = 0;
    for (const EvalOutcome& o : outcomes) {
        prompt_tokens += o.prompt_tokens;
        generated += o.generated_tokens;
    }
    app::JsonWriter w;
    w.begin_object();
    w.key("questions").value(run.questions);
    w.key("model").value(run.model_dir);
    w.key("model_type").value(run.model_type);
    w.key("backend").value(run.backend);
    w.key("prompt_format").value(run.prompt_format);
    w.key("memory_source").begin_object().key("kind").value(run.memory_kind);
    if (run.memory_kind != "none") w.key("location").value(run.memory_location);
    w.end_object();
    w.key("retrieval");
    if (run.retrieval.empty()) w.null();
    else w.value(run.retrieval);
    if (!run.retrieval.empty()) {
        w.key("min_relative_score").value(run.min_relative_score);
        w.key("min_references").value(static_cast<int64_t>(run.min_references));
        w.key("grounded").value(run.grounded);
    }
    w.key("max_tokens").value(run.max_tokens);
    write_counts(w, tally_all(outcomes));
    w.key("per_set").begin_object();
    for (const Tally& t : tally_sets(outcomes)) {
        w.key(t.set).begin_object();
        write_counts(w, t);
        w.end_object();
    }
    w.end_object();
    w.key("prompt_tokens").value(prompt_tokens);
    w.key("generated_tokens").value(generated);
    w.key("seconds").value(run.seconds);
    w.key("tokens_per_second").value(run.generation_seconds > 0 ? static_cast<double>(generated) / run.generation_seconds : 0.0);
    w.end_object();
    return w.str() + "\n";
}

std::string eval_items_jsonl(const std::vector<EvalOutcome>& outcomes) {
    std::string out;
    for (const EvalOutcome& o : outcomes) {
        app::JsonWriter w;
        w.begin_object();
        w.key("id").value(o.item->id);
        w.key("set").value(o.item->set);
        w.key(o.item->is_question ? "question" : "prompt").value(o.item->text);
        w.key("expected").array(o.item->expected);
        w.key("output").value(o.output);
        w.key("exact").value(o.score.exact);
        w.key("contains").value(o.score.contains);
        w.key("stop").value(o.stop);
        w.key("generated_tokens").value(o.generated_tokens);
        w.key("references").begin_array();
        for (const RetrievedReference& r : o.references) {
            w.begin_object().key("id").value(static_cast<uint64_t>(r.id));
            if (!r.title.empty()) w.key("title").value(r.title);
            if (!r.source.empty()) w.key("source").value(r.source);
            if (!r.doc_id.empty()) w.key("doc_id").value(r.doc_id);
            if (r.doc_version) w.key("doc_version").value(r.doc_version);
            w.end_object();
        }
        w.end_array();
        w.end_object();
        out += w.str() + "\n";
    }
    return out;
}

void check_writable(const std::string& path, const std::string& flag) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::is_directory(path, ec)) throw Error(flag + " '" + path + "' is a folder; expected a file name");
    const fs::path parent = fs::path(path).parent_path();
    const fs::path folder = parent.empty() ? fs::path(".") : parent;
    if (!fs::is_directory(folder, ec)) throw Error(flag + " '" + path + "': folder '" + folder.string() + "' does not exist");
    if (::access(folder.c_str(), W_OK) != 0)
        throw Error(flag + " '" + path + "': folder '" + folder.string() + "' is not writable");
}

}  // namespace mnemo::cli
