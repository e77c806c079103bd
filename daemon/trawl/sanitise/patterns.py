"""Patterns for text that addresses the AI reading a page, rather than the people reading it.

Precision comes first: a tutorial about LLMs that says "the system prompt sets the tone" or a docs
page that says "run the following command" is ordinary content. So every rule needs an *imperative
address to the reader-model*: an override of its instructions, a new identity for it, a message
to "the AI/assistant reading this", a fake chat-role or tool marker, a request to hide something
from the user, or a request to send the user's data somewhere. Each rule has a name (shown by the
benchmark) and a scope: "all" rules run on the whole text, "prose" rules skip code (fenced blocks and
inline code spans), where prompt formats are legitimately shown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Literal

Scope = Literal["all", "prose"]
_F = re.IGNORECASE | re.MULTILINE

# Shared vocabulary -----------------------------------------------------------------------------
# Names of AI readers. Bare "assistant", "agent", "bot", "Claude" or "Gemini" are people, jobs and star
# signs on ordinary pages, so they only count with an AI qualifier.
_AI = (
    r"(?:ai|a\.i\.|llms?|gpt(?:-?\d\w*)?|chatgpt|chatbots?|(?:large\s+)?language\s+models?|"
    r"(?:ai|llm|gpt)[\s-]+(?:models?|assistants?|agents?|systems?|tools?|bots?|crawlers?|scrapers?|readers?)|"
    r"(?:virtual|digital|coding)\s+assistants?|autonomous\s+agents?)"
)
# Where an imperative starts: a line or sentence start, after punctuation or a quote, or after "please",
# "now", "you must" ... Third-person uses ("the model will ignore previous instructions") do not match.
_IMP = (
    r"(?:^|(?<=[.!?:;,(\[\"'“”*>—–\-])\s*|\b(?:please|now|and|then|so|also|simply|just|kindly|always|"
    r"immediately|first|you\s+(?:must|should|need\s+to|have\s+to|are\s+to|will))\s+)"
)
# After "if you are an AI": the sentence goes on about the reader, not "an AI enthusiast".
_AI_END = (
    r"(?=\s*[,.;:!)\-—]|\s+(?:reading|processing|summari[sz]ing|parsing|crawling|visiting|browsing|that|who|"
    r"like|such|then|please|you|and|or|tasked|asked|here)\b|\s*$)"
)
_PREV_EN = r"(?:previous|prior|preceding|above|earlier|foregoing|all\s+(?:previous|prior|earlier|other))"
_DATA = (
    r"(?:conversation|chat\s+history|chat\s+logs?|message\s+history|previous\s+messages|system\s+prompt|"
    r"memory|memories|(?:the\s+)?user'?s?\s+(?:data|emails?|files|information|details|messages|contacts|"
    r"passwords?|credentials|api\s+keys?|cookies|session)|(?:all|any)\s+(?:api\s+keys|credentials|passwords|"
    r"secrets|cookies|tokens)|environment\s+variables|\.env\s+file|ssh\s+keys?)"
)
_RULES_EN = (
    r"(?:instructions?|prompts?|directives?|guidelines|guardrails|rules|commands|context|programming|"
    r"system\s+(?:prompt|message)s?|restrictions|constraints)"
)


@dataclass(frozen=True, slots=True)
class Rule:
    """``needles``: groups of lower-case substrings, one of each group must occur before the pattern runs
    (a cheap test that skips most texts); ``needs_ai``: the text must name an AI reader (``mentions_ai``)."""

    name: str
    pattern: re.Pattern[str]
    scope: Scope = "all"
    needles: tuple[tuple[str, ...], ...] = ()
    needs_ai: bool = False


def _r(name: str, pattern: str, scope: Scope = "all", flags: int = _F) -> Rule:
    return Rule(name, re.compile(pattern, flags), scope)


RULES: tuple[Rule, ...] = (
    # --- overriding the reader's instructions -------------------------------------------------
    _r(
        "override.en",
        rf"{_IMP}(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+|of\s+)?"
        rf"(?:(?:the|your|my|these|those|every|everything|what)\s+)?(?:\w+\s+)?{_PREV_EN}\s+"
        rf"(?:\w+\s+)?{_RULES_EN}\b",
    ),
    _r(
        "override.en.all",
        rf"{_IMP}(?:ignore|disregard|forget)\s+(?:all|any)\s+(?:(?:of\s+)?(?:the|your|my)\s+)?"
        rf"(?:instructions|prompts|directives|system\s+prompts?)\b",
    ),
    _r(
        "override.en.your",
        rf"{_IMP}(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+)?your\s+(?:\w+\s+)?"
        rf"(?:instructions|programming|guidelines|guardrails|system\s+prompt)\b",
    ),
    _r(
        "override.de",
        r"\b(?:ignorier(?:e|en\s+sie)?|vergiss|vergessen\s+sie|missachte|übergehe)\s+(?:bitte\s+)?"
        r"(?:alle\s+|sämtliche\s+)?(?:(?:die|deine|ihre|alle)\s+)?(?:vorherigen|bisherigen|obigen|vorigen|"
        r"früheren|vorangegangenen|vorstehenden|ursprünglichen|alle)\s+(?:\w+\s+)?"
        r"(?:anweisungen|instruktionen|befehle|regeln|anordnungen|vorgaben|prompts?)\b",
    ),
    _r(
        "override.fr",
        r"\b(?:ignore[rz]?|oublie[rz]?|ne\s+tiens\s+pas\s+compte\s+d[e']s?)\s+(?:toutes\s+|tous\s+)?"
        r"(?:les|tes|vos|ces)\s+(?:\w+\s+)?(?:instructions|consignes|directives|règles|ordres|"
        r"commandes)\s+(?:\w+\s+)?(?:précédentes|antérieures|ci-dessus|initiales|d'origine|"
        r"données|reçues)\b",
    ),
    _r(
        "override.es",
        r"\b(?:ignora|ignore|ignorad|olvida|olvide|olvidad|descarta|omite)\s+(?:todas\s+|todos\s+)?"
        r"(?:las|tus|sus|los)\s+(?:\w+\s+)?(?:instrucciones|indicaciones|directrices|órdenes|reglas|"
        r"comandos)\s+(?:\w+\s+)?(?:anteriores|previas|de\s+arriba|iniciales|originales|recibidas)\b",
    ),
    _r(
        "override.pt_it",
        r"\b(?:ignore|ignora|ignorate|esqueça|dimentica)\s+(?:todas\s+|tutte\s+)?(?:as|le|suas|tue)\s+"
        r"(?:instruções|istruzioni)\s+(?:anteriores|precedenti)\b",
    ),
    _r(
        "override.ru",
        r"(?:игнорируй(?:те)?|проигнорируй(?:те)?|забудь(?:те)?|не\s+обращай(?:те)?\s+внимания\s+на)\s+"
        r"(?:все\s+)?(?:(?:свои|твои|ваши|эти)\s+)?(?:предыдущие|прежние|вышеуказанные|предшествующие|"
        r"изначальные|исходные|все|свои)\s+(?:\w+\s+)?(?:инструкции|указания|команды|правила|"
        r"распоряжения|промпты)",
    ),
    _r(
        "override.zh",
        r"(?:忽略|无视|忽视|忘记|忘掉|不要理会|不要遵守|無視|忽略掉)(?:你)?(?:之前|以前|上面|先前|以上|前面|"
        r"此前|原来|原有|所有|全部|一切)(?:的)?(?:所有|全部|一切)?(?:的)?(?:指令|指示|说明|提示|提示词|"
        r"规则|命令|設定|设定|約束|约束|指令集)",
    ),
    _r(
        "override.ja",
        r"(?:以前|前|上記|これまで|今まで|先ほど|最初|元)の(?:すべての|全ての)?(?:指示|命令|指令|"
        r"プロンプト|ルール|設定)を(?:すべて|全て)?(?:無視|忘れ|破棄)",
    ),
    # --- a new identity for the reader ---------------------------------------------------------
    _r(
        "identity.en",
        rf"\b(?:you\s+are\s+now|you're\s+now|from\s+now\s+on,?\s+you\s+(?:are|will\s+be|will\s+act\s+as|"
        rf"must\s+act\s+as)|you\s+will\s+now\s+act\s+as|pretend\s+(?:that\s+)?you\s+are|"
        rf"you\s+are\s+no\s+longer)\s+(?:an?\s+|the\s+|my\s+)?(?:[\w-]+\s+)?"
        rf"(?:{_AI}|dan|unrestricted|unfiltered|uncensored|jailbroken|(?:linux\s+)?terminal|"
        rf"in\s+(?:developer|dan|god|jailbreak|unrestricted)\s+mode)\b",
    ),
    _r(
        "identity.en.unbound",
        r"\b(?:you\s+are|you're)\s+(?:now\s+)?(?:no\s+longer|not)\s+(?:bound|restricted|limited|constrained)\s+"
        r"by\s+(?:any\s+|your\s+|the\s+)?(?:\w+\s+)?(?:rules|guidelines|policies|restrictions|instructions|"
        r"content\s+polic(?:y|ies))",
    ),
    _r(
        "identity.de",
        r"\b(?:du\s+bist\s+(?:jetzt|nun|ab\s+sofort|ab\s+jetzt)|ab\s+(?:jetzt|sofort)\s+bist\s+du)\s+"
        r"(?:\w+\s+){0,3}?(?:ki|ki-\w+|assistent\w*|sprachmodell|chatbot|bot|dan|uneingeschränkt\w*)\b",
    ),
    _r(
        "identity.fr",
        r"\b(?:tu\s+es|vous\s+êtes)\s+(?:maintenant|désormais|dorénavant)\s+(?:\w+\s+){0,3}?"
        r"(?:ia|assistant\w*|modèle|chatbot|bot|dan|sans\s+restriction)\b",
    ),
    _r(
        "identity.es",
        r"\b(?:ahora\s+eres|a\s+partir\s+de\s+ahora\s+eres|desde\s+ahora\s+eres)\s+(?:\w+\s+){0,3}?"
        r"(?:ia|asistente|modelo|chatbot|bot|dan|sin\s+restricciones)\b",
    ),
    _r(
        "identity.ru",
        r"(?:теперь\s+ты|отныне\s+ты|с\s+этого\s+момента\s+ты)\s+(?:\w+\s+){0,3}?"
        r"(?:ии|ассистент\w*|модель|чат-?бот\w*|бот|dan|нейросеть)",
    ),
    _r("identity.zh", r"(?:你现在是|从现在开始[，,]?你(?:是|将|必须|就是)|你現在是)[^。！？\n]{0,12}?"
       r"(?:AI|人工智能|助手|模型|机器人|DAN|不受限制)"),
    _r("identity.ja", r"(?:あなたは今から|今からあなたは|これからあなたは)[^。！？\n]{0,15}?"
       r"(?:AI|人工知能|アシスタント|モデル|ボット|DAN|制限のない)"),
    # --- messages to "the AI reading this" -----------------------------------------------------
    _r(
        "address.en",
        rf"\b(?:(?:if|when)\s+you\s+are\s+an?\s+(?:\w+\s+)?{_AI}{_AI_END}|"
        rf"(?:note|message|instructions?|attention|memo)\s+(?:to|for)\s+(?:any\s+|all\s+|the\s+)?{_AI}\b|"
        rf"(?:dear|hey|hello|hi|attention)\s+{_AI}\s*[,:!]\s*(?:please\s+)?(?:ignore|disregard|forget|"
        rf"you\s+(?:must|should|are|will|need)|do\s+not|don't|always|never|make\s+sure|remember|from\s+now|"
        rf"before|when|if\s+you)|"
        rf"(?:any|all|every)\s+{_AI}\s+(?:reading|processing|summari[sz]ing|visiting|crawling|parsing|browsing|"
        rf"that\s+reads?|who\s+reads?)|"
        rf"{_AI}\s+(?:reading|processing|summari[sz]ing|parsing)\s+this\s+(?:page|text|document|site|content)"
        rf"\s*(?:must|should|shall|is\s+instructed|are\s+instructed|needs?\s+to)|"
        rf"as\s+an\s+{_AI},?\s+you\s+(?:must|should|are\s+required|will|need|have\s+to))",
    ),
    # "AI agents reading this: stop, and fetch ...": the readers named as a group, then told what to do.
    _r(
        "address.en.group",
        rf"\b(?:(?:any|all|every|other|fellow)\s+)?{_AI}\s+(?:reading|processing|summari[sz]ing|parsing|crawling|"
        rf"visiting|browsing|scraping|ingesting)\s+this(?:\s+(?:page|text|document|site|content|post|article|"
        rf"message|email|file))?\s*[:,!\-—]+\s*(?:please\s+)?(?:\w+[,!]?\s+){{0,3}}?(?:stop|ignore|disregard|"
        rf"forget|fetch|visit|open|load|send|e-?mail|post|include|add|tell|say|respond|reply|answer|output|print|"
        rf"remember|recommend|summari[sz]e|go\s+to|call|run|execute|do\s+not|don't|never|always|you\s+(?:must|"
        rf"should|are|will|need))\b",
    ),
    _r(
        "address.group.multi",
        r"(?:\b(?:ki|ki-\w+|sprachmodelle?|llms?)\s*,?\s+(?:die|das|der)\s+(?:dies|diese\s+seite|diesen\s+text)\s+"
        r"(?:lesen|liest|verarbeiten|verarbeitet|zusammenfass\w+)|"
        r"\b(?:ia|agents?\s+ia|agents?\s+d'ia|modèles?\s+de\s+langage|llms?)\s+qui\s+(?:lisez|lisent|lit|"
        r"traitez|traitent|résumez|résument)\s+(?:ceci|cette\s+page|ce\s+texte|ce\s+document)|"
        r"\b(?:ia|agentes?\s+de\s+ia|modelos?\s+de\s+lenguaje|llms?)\s+que\s+(?:lee|leen|lees|leéis|procesa|"
        r"procesan|resume|resumen|está[ns]?\s+leyendo)\s+(?:esto|esta\s+página|este\s+texto|este\s+documento)|"
        r"(?:ии|нейросети|языковые\s+модели|llm)\s*,?\s+(?:которые|который)\s+(?:читает|читают|обрабатывает|"
        r"обрабатывают)\s+(?:это|эту\s+страницу|этот\s+текст))"
        r"\s*[:,!]",
    ),
    _r(
        "address.en.colon",
        rf"^\W{{0,3}}(?:to\s+(?:the\s+|any\s+)?)?{_AI}\s*:\s*(?:please\s+)?(?:ignore|disregard|you\s+must|"
        rf"you\s+should|you\s+are|do\s+not|don't|always|never|respond|reply|say|tell|include|recommend|send|"
        rf"summari[sz]e)",
        "prose",
    ),
    _r(
        "address.de",
        r"\b(?:wenn|falls)\s+(?:du|sie)\s+(?:eine?\s+)?(?:ki|ki-\w+|künstliche\s+intelligenz|sprachmodell|"
        r"assistent\w*|chatbot|bot|llm)\s+(?:bist|sind)\b",
    ),
    _r(
        "address.fr",
        r"\bsi\s+(?:tu\s+es|vous\s+êtes)\s+(?:une?\s+)?(?:ia|intelligence\s+artificielle|modèle\s+de\s+langage|"
        r"assistant\w*|chatbot|llm)\b",
    ),
    _r(
        "address.es",
        r"\bsi\s+(?:eres|usted\s+es)\s+(?:una?\s+)?(?:ia|inteligencia\s+artificial|modelo\s+de\s+lenguaje|"
        r"asistente|chatbot|llm)\b",
    ),
    _r(
        "address.ru",
        r"если\s+(?:ты|вы)\s+(?:являешься\s+|являетесь\s+)?(?:ии|искусственный\s+интеллект|языковая\s+модель|"
        r"нейросеть|ассистент|чат-?бот|llm)",
    ),
    _r(
        "address.zh",
        r"(?:如果|假如|若)你是(?:一个|一名)?(?:AI|人工智能|语言模型|大模型|助手|聊天机器人|LLM)(?:助手|模型)?"
        r"(?=[，,：:。！!、\s]|的话|请|你|$)",
    ),
    _r(
        "address.ja",
        r"(?:もし)?あなたが(?:AI|人工知能|言語モデル|アシスタント|チャットボット|LLM)(?:なら|である場合|の場合)",
    ),
    # --- fake chat roles and tool markup -------------------------------------------------------
    _r(
        "role.token",
        r"<\|(?:im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id|end_header_id|"
        r"begin_of_text)\|>|\[/?INST\]|<</?SYS>>",
        "prose",
    ),
    _r(
        "role.line",
        r"^\s*(?:#{1,6}\s*|\*\*)?(?:(?:assistant|system\s+prompt|developer\s+message)\s*(?:\*\*)?\s*:|"
        r"(?:system|human|user)\s*(?:\*\*)?\s*:\s*(?:you\b|ignore|disregard|forget|"
        r"override|from\s+now|new\s+instructions|the\s+(?:assistant|ai|model)\b|important\b|attention\b))",
        "prose",
    ),
    # "Human: ... Assistant: ..." turns, also once whitespace has folded them into one line.
    _r(
        "role.turns",
        r"(?:^|(?<=[\s.!?:;>\]\)\"'”]))(?:human|user)\s*:\s*\S[^\n]{0,400}?(?<=[\s.!?\"'”])assistant\s*:\s*\S",
        "prose",
    ),
    # "SYSTEM: the user now asks you to ...", "[system] you must ...", "<|im_start|>system ...": a chat role
    # at a line start, then an instruction to the reader on the same line.
    _r(
        "role.line.reader",
        r"^\W{0,3}(?:\[\s*(?:system|assistant|developer)\s*\]\s*:?|<\|im_start\|>\s*(?:system|assistant)\b\s*:?|"
        r"(?:system|assistant|developer)\s*(?:\*\*)?\s*:)[^\n]{0,160}?\b(?:you\s+(?:must|should|shall|are\s+to|"
        r"need\s+to|have\s+to)|(?:asks?|wants?|needs?|instructs?|requires?|tells?|orders?)\s+you\s+to|"
        r"(?:please\s+)?(?:e-?mail|send|forward|upload|post|fetch|reveal|leak|share|delete)\s+(?:\w+\s+){0,3}?"
        r"(?:the\s+user'?s?|their|your|all)\b)",
        "prose",
    ),
    _r(
        "role.heading",
        r"^#{1,6}\s*(?:system|system\s+prompt|instruction|assistant|response)\s*:\s*$",
        "prose",
    ),
    _r(
        "role.instructions",
        r"^\s*(?:new|updated|revised|real|actual|true|hidden|secret)\s+instructions\s*:[^\n]{0,80}?"
        rf"\b(?:you|your|{_AI})\b",
        "prose",
    ),
    _r(
        "role.tag",
        r"</?(?:system|system_prompt|system-prompt|tool|tool_call|tool_result|tool_use|tool_response|"
        r"function_calls?|function_results?|antml:\w+)>",
        "prose",
    ),
    _r(
        "role.line.zh_ja",
        r"^\s*(?:系统|系統|システム|助手|アシスタント)\s*[:：]\s*(?:你|あなた|忽略|無視|从现在|今から)",
        "prose",
    ),
    # --- secrecy from the user -----------------------------------------------------------------
    _r(
        "secrecy.en",
        r"\b(?:do\s+not|don't|never|without)\s+(?:tell|telling|inform|informing|notify|notifying|alert|"
        r"alerting|let|letting|mention(?:ing)?\s+(?:this|it)\s+to|reveal(?:ing)?\s+(?:this|it)\s+to)\s+"
        r"(?:the|your)\s+(?:user|human|operator)(?:\s+know)?(?:\s+(?:about|that))?\s+"
        r"(?:this|these|that\s+you|you\s+(?:have|are|were|did)|what\s+you)\b|"
        r"\b(?:hide|conceal|keep)\s+(?:this|these\s+instructions?|this\s+(?:message|instruction))\s+"
        r"(?:secret\s+)?from\s+the\s+user\b|"
        r"\bthe\s+user\s+(?:must|should)\s+(?:not|never)\s+(?:know|learn|find\s+out|see)\s+(?:about\s+)?"
        r"(?:this|these|that\s+you)|"
        r"\b(?:do\s+not|don't|never)\s+(?:mention|reveal|disclose|acknowledge|reference|repeat)\s+"
        r"(?:these|this|the\s+(?:above|following|hidden))\s+(?:instructions?|prompt|directives?)\b",
    ),
    _r(
        "secrecy.de",
        r"\b(?:sag|sage|erzähl|verrate|sagen\s+sie)\s+(?:dem|der)\s+(?:benutzer|nutzer|anwender)\w*\s+"
        r"(?:nichts|nicht)\s+(?:davon|darüber|von\s+diese[nmr])",
    ),
    _r("secrecy.fr", r"\bne\s+(?:le\s+|lui\s+)?(?:dis|dites|révèle|révélez|mentionne|mentionnez)\s+(?:rien|pas)\s+"
       r"(?:de\s+(?:ceci|cela|ces\s+instructions)\s+)?à\s+l'utilisat(?:eur|rice)"),
    _r("secrecy.es", r"\bno\s+(?:le\s+)?(?:digas|diga|menciones|mencione|reveles|revele)\s+(?:nada\s+)?"
       r"(?:de\s+(?:esto|estas\s+instrucciones)\s+)?al\s+usuario"),
    _r("secrecy.ru", r"не\s+(?:говори|сообщай|рассказывай|говорите|сообщайте)\s+(?:об\s+этом\s+|ничего\s+)?"
       r"пользователю"),
    _r("secrecy.zh", r"(?:不要|别|切勿|不得)(?:告诉|告知|透露给|让)用户"),
    _r("secrecy.ja", r"ユーザー(?:に|には)(?:絶対に)?(?:伝えないで|言わないで|教えないで|知らせないで|秘密に)"),
    # --- the reader's secrets and the user's data, sent away -----------------------------------
    _r(
        "exfil.send",
        rf"\b(?:send|post|upload|forward|transmit|exfiltrate|leak|submit|append|include|encode|embed)\w*\s+"
        rf"(?:all\s+|any\s+|the\s+|your\s+|this\s+|our\s+)*(?:\w+\s+){{0,2}}?{_DATA}"
        rf"[^\n]{{0,120}}?(?:https?://|\burl\b|\bendpoint\b|\bwebhook\b|@[\w-]+\.\w+)",
    ),
    _r(
        "exfil.url_template",
        r"https?://\S+[?&][\w-]+=(?:\{\{?|\[|<|%7B)\s*(?:the_?)?(?:conversation|chat|chat_?history|history|"
        r"messages|system_?prompt|prompt|memory|summary|context|user_?(?:data|info|email|messages))"
        r"\s*(?:\}\}?|\]|>|%7D)",
        "prose",
    ),
    _r(
        "exfil.multi",
        r"(?:sende|schicke|übermittle|envoie|envoyez|transmets|envía|envia|manda|отправь|перешли|отправьте|"
        r"发送|发给|传给|送信して|送って)[^\n]{0,60}?(?:konversation|gesprächsverlauf|chatverlauf|systemprompt|"
        r"nutzerdaten|benutzerdaten|conversation|historique|prompt\s+système|données\s+de\s+l'utilisateur|"
        r"conversación|historial|prompt\s+del\s+sistema|datos\s+del\s+usuario|переписк|истори[юя]\s+"
        r"(?:чата|диалога|переписки)|системн\w+\s+промпт|данные\s+пользовател|对话|聊天记录|系统提示|"
        r"用户(?:的)?数据|会話|チャット履歴|システムプロンプト|ユーザー(?:の)?データ)[^\n]{0,100}?"
        r"(?:https?://|@[\w-]+\.\w+)",
    ),
    # --- asking the reader to reveal its instructions ------------------------------------------
    _r(
        "leak.prompt",
        r"\b(?:reveal|print|output|repeat|show|display|tell\s+me|write\s+out|dump|leak)\s+(?:me\s+)?"
        r"(?:all\s+)?your\s+(?:\w+\s+)?(?:system\s+prompt|initial\s+(?:prompt|instructions)|"
        r"hidden\s+instructions|original\s+instructions|instructions\s+verbatim|prompt\s+verbatim)",
    ),
)

_OVERRIDE_EN = ("ignore", "disregard", "forget", "override", "bypass")
_NEEDLES: dict[str, tuple[tuple[str, ...], ...]] = {
    "override.en": (_OVERRIDE_EN, ("previous", "prior", "preceding", "above", "earlier", "foregoing", "other")),
    "override.en.all": (("ignore", "disregard", "forget"), ("all ", "any "),
                        ("instructions", "prompts", "directives", "system prompt")),
    "override.en.your": (_OVERRIDE_EN, ("your",), ("instructions", "programming", "guidelines", "guardrails",
                                                   "system prompt")),
    "override.de": (("ignorier", "vergiss", "vergessen sie", "missachte", "übergehe"),
                    ("anweisung", "instruktion", "befehl", "regeln", "anordnung", "vorgabe", "prompt")),
    "override.fr": (("ignore", "oublie", "ne tiens pas compte"),
                    ("instructions", "consignes", "directives", "règles", "ordres", "commandes")),
    "override.es": (("ignora", "ignore", "olvida", "olvide", "descarta", "omite"),
                    ("instrucciones", "indicaciones", "directrices", "órdenes", "reglas", "comandos")),
    "override.pt_it": (("ignore", "ignora", "esqueça", "dimentica"), ("instruções", "istruzioni")),
    "override.ru": (("игнорир", "проигнорир", "забуд", "не обращай"),
                    ("инструкци", "указани", "команд", "правил", "распоряжени", "промпт")),
    "override.zh": (("忽略", "无视", "忽视", "忘记", "忘掉", "不要理会", "不要遵守", "無視"),),
    "override.ja": (("無視", "忘れ", "破棄"),),
    "identity.en": (("you are now", "you're now", "from now on", "will now act as", "pretend", "no longer"),),
    "identity.en.unbound": (("you are", "you're"), ("bound by", "restricted by", "limited by", "constrained by")),
    "identity.de": (("du bist", "bist du"),),
    "identity.fr": (("tu es", "vous êtes"), ("maintenant", "désormais", "dorénavant")),
    "identity.es": (("eres",),),
    "identity.ru": (("теперь ты", "отныне ты", "с этого момента ты"),),
    "identity.zh": (("你现在是", "从现在开始", "你現在是"),),
    "identity.ja": (("あなたは今から", "今からあなたは", "これからあなたは"),),
    "address.de": (("wenn du", "falls du", "wenn sie", "falls sie"),),
    "address.fr": (("si tu es", "si vous êtes"),),
    "address.es": (("si eres", "si usted es"),),
    "address.ru": (("если ты", "если вы"),),
    "address.zh": (("你是",),),
    "address.ja": (("あなたが",),),
    "role.token": (("<|", "[inst]", "[/inst]", "<<sys", "<</sys"),),
    "role.line": (("assistant", "system", "human", "user", "developer message"), (":",)),
    "role.instructions": (("instructions",), (":",)),
    "role.line.reader": (("system", "assistant", "developer", "<|im_start|>"), ("you", "their", "user", "all")),
    "address.en.group": (("reading this", "processing this", "summarising this", "summarizing this",
                          "parsing this", "crawling this", "visiting this", "browsing this", "scraping this",
                          "ingesting this"),),
    "address.group.multi": (("lesen", "liest", "verarbeit", "zusammenfass", "qui ", "que ", "котор"),),
    "role.heading": (("#",), (":",), ("system", "instruction", "assistant", "response")),
    "role.turns": (("human", "user"), ("assistant",), (":",)),
    "role.tag": (("<system", "</system", "<tool", "</tool", "<function", "</function", "<antml", "</antml"),),
    "role.line.zh_ja": (("系统", "系統", "システム", "助手", "アシスタント"),),
    "secrecy.en": (("tell", "inform", "notify", "alert", "let", "mention", "reveal", "hide", "conceal", "keep",
                    "must not", "should not", "must never", "should never", "disclose", "acknowledge",
                    "reference", "repeat"),
                   ("user", "human", "operator", "instruction", "prompt", "directive")),
    "secrecy.de": (("benutzer", "nutzer", "anwender"),),
    "secrecy.fr": (("utilisat",),),
    "secrecy.es": (("al usuario",),),
    "secrecy.ru": (("пользователю",),),
    "secrecy.zh": (("用户",),),
    "secrecy.ja": (("ユーザー",),),
    "exfil.send": (("conversation", "chat history", "chat log", "message history", "previous messages",
                    "system prompt", "memor", "user", "api keys", "credentials", "passwords", "secrets", "cookies",
                    "tokens", "environment variables", ".env", "ssh key"),
                   ("http", "url", "endpoint", "webhook", "@")),
    "exfil.url_template": (("http",), ("={", "=[", "=<", "%7b")),
    "exfil.multi": (("http", "@"),),
    "leak.prompt": (("your",), ("system prompt", "initial prompt", "initial instructions", "hidden instructions",
                                "original instructions", "verbatim")),
}
_NEEDS_AI = frozenset({"address.en", "address.en.colon", "address.en.group"})
RULES = tuple(replace(r, needles=_NEEDLES.get(r.name, ()), needs_ai=r.name in _NEEDS_AI) for r in RULES)
