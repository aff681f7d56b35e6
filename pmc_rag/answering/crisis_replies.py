"""What the crisis check's decisions say to the reader, in the message's language: the emergency reply, the
crisis line for a wish to die, and the one line shown above an answer where danger is possible
(`pmc_rag.answering.crisis` decides which).

Usage:
```python
decision = check_crisis("my daughter is having a seizure that won't stop")
crisis_reply(decision)     # "This sounds like an emergency. Call your local emergency number now ..."
safety_line(decision)      # None: certain danger gets the reply, not a line above an answer
```
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pmc_rag.answering.crisis import CrisisDecision

_EMERGENCY = {
    "en": "This sounds like an emergency. Call your local emergency number now (112 in Europe, 911 in North America, "
          "999 in the UK) or go to the nearest emergency department. The call handler will tell you what to do until "
          "help arrives.{extra} This service summarises research papers and cannot help in an emergency.",
    "fr": "Cela ressemble à une urgence. Appelez tout de suite le 15 (SAMU) ou le 112, ou allez aux urgences les plus "
          "proches. La personne au téléphone vous dira quoi faire en attendant les secours. Ce service résume des "
          "articles de recherche et ne peut pas aider en cas d'urgence.",
    "de": "Das klingt nach einem Notfall. Rufen Sie sofort den Notruf 112 an oder fahren Sie in die nächste "
          "Notaufnahme. Die Leitstelle sagt Ihnen, was bis zum Eintreffen der Hilfe zu tun ist. Dieser Dienst fasst "
          "Forschungsartikel zusammen und kann in einem Notfall nicht helfen.",
    "es": "Esto parece una urgencia. Llame ahora al 112 (911 en América) o vaya al servicio de urgencias más cercano. "
          "Quien atienda la llamada le dirá qué hacer hasta que llegue la ayuda. Este servicio resume artículos de "
          "investigación y no puede ayudar en una urgencia.",
    "it": "Sembra un'emergenza. Chiami subito il 112 o vada al pronto soccorso più vicino. L'operatore le dirà "
          "cosa fare finché arrivano i soccorsi. Questo servizio riassume articoli di ricerca e non può aiutare in "
          "un'emergenza.",
    "nl": "Dit klinkt als een noodsituatie. Bel nu 112 of ga naar de dichtstbijzijnde spoedeisende hulp. De "
          "meldkamer vertelt u wat u kunt doen tot de hulp er is. Deze dienst vat onderzoeksartikelen samen en kan "
          "in een noodsituatie niet helpen.",
    "pt": "Isto parece uma emergência. Ligue já para o 112 (192 no Brasil) ou vá à urgência mais próxima. Quem "
          "atender dirá o que fazer até chegar ajuda. Este serviço resume artigos de investigação e não pode ajudar "
          "numa emergência.",
}
_POISON_LINE = (" For a poisoning or overdose you can also call a poison centre (1-800-222-1222 in the US), but call "
                "the emergency number first if the person is drowsy, not breathing normally or having a seizure.")
_CRISIS_LINE = {
    "en": "I'm really sorry you're going through this. You don't have to face it alone, and you can talk to someone "
          "right now: call or text 988 in the US and Canada, call Samaritans on 116 123 in the UK and Ireland, or "
          "call your local emergency number (112 in Europe, 911, 999) if you might act on these thoughts or someone "
          "is in danger now. If this is about someone else, stay with them if you can and call for help. This "
          "service only searches research papers; a person on those lines can help in a way it cannot.",
    "fr": "Je suis vraiment désolé que vous traversiez cela. Vous n'êtes pas seul(e) : vous pouvez parler à quelqu'un "
          "tout de suite en appelant le 3114 (numéro national de prévention du suicide, 24h/24, gratuit), ou le 112 "
          "si vous êtes en danger maintenant. Si cela concerne un proche, restez avec lui si vous le pouvez et "
          "appelez de l'aide. Ce service ne fait que chercher des articles de recherche.",
    "de": "Es tut mir sehr leid, dass es Ihnen so geht. Sie müssen das nicht allein durchstehen: Die "
          "TelefonSeelsorge ist rund um die Uhr kostenlos erreichbar unter 0800 111 0 111 oder 0800 111 0 222. Wenn "
          "Sie oder jemand anderes jetzt in Gefahr sind, rufen Sie den Notruf 112. Wenn es um eine andere Person "
          "geht, bleiben Sie bei ihr, wenn Sie können, und holen Sie Hilfe. Dieser Dienst durchsucht nur "
          "Forschungsartikel.",
    "es": "Siento mucho que esté pasando por esto. No tiene que afrontarlo solo/a: puede hablar ahora con alguien "
          "llamando al 024 (línea de atención a la conducta suicida en España, gratuita, 24 horas) o al 112 si "
          "usted u otra persona está en peligro ahora. Si se trata de otra persona, quédese con ella si puede y "
          "pida ayuda. Este servicio solo busca artículos de investigación.",
    # Telefono Amico Italia: every day 10:00-24:00; 113 Zelfmoordpreventie: day and night, free (both numbers);
    # Portugal's national suicide prevention line 1411 (24 hours, since 2025-09-10); Brazil's CVV 188 (free).
    "it": "Mi dispiace davvero che stia attraversando tutto questo. Non deve affrontarlo da solo/a: può parlare con "
          "qualcuno chiamando Telefono Amico Italia allo 02 2327 2327 (ogni giorno dalle 10 alle 24), oppure il 112 "
          "se lei o un'altra persona è in pericolo adesso. Se si tratta di un'altra persona, resti con lei se può e "
          "chiami aiuto. Questo servizio cerca soltanto articoli di ricerca.",
    "nl": "Het spijt me heel erg dat u dit doormaakt. U hoeft het niet alleen te doen: praat nu met iemand van 113 "
          "Zelfmoordpreventie, gratis en anoniem, dag en nacht: bel 113 of 0800-0113, of chat via 113.nl. Bel 112 "
          "als u of iemand anders nu in gevaar is. Gaat het om iemand anders, blijf dan bij die persoon als het kan "
          "en haal hulp. Deze dienst zoekt alleen in onderzoeksartikelen.",
    "pt": "Lamento muito que esteja a passar por isto. Não tem de enfrentar isto sozinho/a: pode falar agora com "
          "alguém pela linha de prevenção do suicídio 1411 (Portugal, 24 horas) ou pelo CVV, 188 (Brasil, "
          "gratuito). Ligue 112 (192 no Brasil) se você ou outra pessoa estiver em perigo agora. Se se trata de "
          "outra pessoa, fique com ela se puder e peça ajuda. Este serviço apenas procura artigos de investigação.",
}


_SAFETY_LINE = {
    "en": "If you or someone with you may be in danger now, call your local emergency number (112 in Europe, 911 in "
          "North America, 999 in the UK); if you are thinking of ending your life, call or text 988 (US, Canada) "
          "or Samaritans on 116 123 (UK, Ireland). What follows summarises research and cannot help in an emergency.",
    "fr": "Si vous ou un proche êtes peut-être en danger maintenant, appelez le 15 ou le 112 ; si vous pensez à "
          "mettre fin à vos jours, appelez le 3114. Ce qui suit résume des recherches et ne peut pas aider en cas "
          "d'urgence.",
    "de": "Wenn Sie oder jemand bei Ihnen jetzt in Gefahr sein könnten, rufen Sie den Notruf 112; wenn Sie daran "
          "denken, sich das Leben zu nehmen, die TelefonSeelsorge 0800 111 0 111. Das Folgende fasst Forschung "
          "zusammen und kann in einem Notfall nicht helfen.",
    "es": "Si usted o alguien con usted puede estar en peligro ahora, llame al 112 (911 en América); si piensa en "
          "quitarse la vida, llame al 024. Lo que sigue resume investigaciones y no puede ayudar en una urgencia.",
    "it": "Se lei o qualcuno vicino a lei può essere in pericolo adesso, chiami il 112; se pensa di togliersi la "
          "vita, Telefono Amico Italia allo 02 2327 2327. Quanto segue riassume ricerche e non può aiutare in "
          "un'emergenza.",
    "nl": "Als u of iemand bij u nu in gevaar kan zijn, bel 112; denkt u aan zelfdoding, bel dan gratis 113 of "
          "0800-0113. Wat volgt vat onderzoek samen en kan in een noodsituatie niet helpen.",
    "pt": "Se você ou alguém consigo pode estar em perigo agora, ligue 112 (192 no Brasil); se pensa em pôr fim à "
          "vida, ligue 1411 (Portugal) ou 188 (CVV, Brasil). O que se segue resume investigação e não pode ajudar "
          "numa emergência.",
}


def safety_line(decision: CrisisDecision) -> str | None:
    """The one line shown above an answer to a message that may describe danger (`decision.possible`), in the
    message's language; None otherwise."""
    return _SAFETY_LINE.get(decision.language, _SAFETY_LINE["en"]) if decision.possible else None


def crisis_reply(decision: CrisisDecision) -> str | None:
    """The reply to a crisis, in the message's language (English where it is not French, German, Spanish,
    Italian, Dutch or Portuguese);
    None when the decision is not a crisis."""
    if not decision.crisis:
        return None
    if decision.category == "suicide_self_harm":
        return _CRISIS_LINE.get(decision.language, _CRISIS_LINE["en"])
    text = _EMERGENCY.get(decision.language, _EMERGENCY["en"])
    return text.format(extra=_POISON_LINE if decision.category == "overdose_poisoning" else "")
