#include "conversation/code_blocks.hpp"

#include "conversation/message_blocks.hpp"

namespace mnemo::gui {

QStringList fencedCodeBlocks(const QString& markdown) {
    QStringList out;
    for (const MessageBlock& b : splitMessageBlocks(markdown))
        if (b.kind == MessageBlock::Kind::Code) out << b.text;
    return out;
}

}  // namespace mnemo::gui
