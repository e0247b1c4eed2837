#include "eval/question_format.hpp"

namespace mnemo::cli {

std::string QuestionFormat::prompt(const std::string& question) const {
    if (!templated) return "Question: " + question + "\nAnswer:";
    return tmpl.render({{"user", question}}, /*add_generation_prompt=*/true);
}

std::vector<std::string> QuestionFormat::stops() const {
    std::vector<std::string> s = templated ? tmpl.stop_strings : std::vector<std::string>{};
    s.push_back("\n");
    return s;
}

QuestionFormat question_format(const std::string& model_dir) {
    QuestionFormat f;
    std::string note;
    f.tmpl = detect_chat_template(model_dir, &note);
    // Plain is the engine's stand-in when tokenizer_config.json has no template, Raw when the
    // template is one it does not know: neither is the model's own format.
    f.templated = f.tmpl.format != ChatFormat::Plain && f.tmpl.format != ChatFormat::Raw;
    return f;
}

}  // namespace mnemo::cli
