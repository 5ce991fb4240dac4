"""A judgment browser: one static HTML page per judged suite, every judged item readable.

The page is plain HTML with inline CSS and JavaScript and the items embedded as JSON (no
server, no external script or style): it opens from disk and inside Snakemake's report
(an iframe).  The suites build their items (:mod:`isqaflow.arena.browse`,
:mod:`isqaflow.drfr.browse`); this module checks them and writes the page.

An item is a dict with

* ``id``, ``kind`` (e.g. "reference", "all_pairs", "human", "control", "response"),
  ``judge``, ``setting``, ``title`` and ``systems`` (the systems it concerns; the
  system filter matches any of them);
* ``texts``: ``[[label, text], ...]`` (the query or instruction and the answers or the
  response, shown in full);
* ``replies``: ``[[label, text, scores], ...]`` (the judge's reply per order or per
  question; ``scores`` a dict of numbers such as log-probabilities and margins, or None);
* ``verdict`` (the configured rule's; "invalid" when none), ``verdicts`` (every rule's);
* ``flip`` (True: the two orders disagreed; None: not applicable), ``length_diff``
  (characters, first answer minus second; None: not applicable), ``human`` (the human
  label; None: none) and ``human_agrees``;
* ``control`` (the known-answer control's name, None for a real item), ``expected`` and
  ``correct``;
* ``tally``: counts summed over the shown items (e.g. ``{"YES": 3, "NO": 1}``).

Filters (the page reads them from, and writes them to, the URL's hash, so a link such as
``arena.html#system=smollm2&kind=reference&verdict=1`` opens the page filtered):
``judge``, ``setting``, ``kind``, ``system``, ``verdict``, ``flip`` ("yes"/"no"),
``human`` ("labelled", "agree", "disagree").  The page shows how many items match
(``#count``) and the summed tallies (``#tally-<key>``).
"""

from __future__ import annotations

import html
import json
import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

from isqaflow.io import write_text

__all__ = ["FILTERS", "ITEM_KEYS", "check_items", "render_page", "write_browser"]

ITEM_KEYS = (
    "id",
    "kind",
    "judge",
    "setting",
    "title",
    "systems",
    "texts",
    "replies",
    "verdict",
    "verdicts",
    "flip",
    "length_diff",
    "human",
    "human_agrees",
    "control",
    "expected",
    "correct",
    "tally",
)
FILTERS = ("judge", "setting", "kind", "system", "verdict", "flip", "human")
MAX_SHOWN = 300  # cards drawn at once (the counts always cover every matching item)


def check_items(items: Sequence[Mapping[str, Any]]) -> None:
    """Raise ValueError naming the item and key when an item lacks a key or repeats an id."""
    seen: set[str] = set()
    for n, item in enumerate(items):
        missing = [key for key in ITEM_KEYS if key not in item]
        if missing:
            raise ValueError(f"browser item {n} ({item.get('id')!r}) lacks {missing}")
        key = f"{item['judge']}/{item['setting']}/{item['id']}"
        if key in seen:
            raise ValueError(
                f"browser item {n}: id {item['id']!r} of judge {item['judge']!r} repeated"
            )
        seen.add(key)
        for field in ("texts", "replies"):
            for entry in item[field]:
                if len(entry) != (2 if field == "texts" else 3):
                    raise ValueError(
                        f"browser item {item['id']!r}: malformed {field} entry {entry!r}"
                    )


def _finite(value: Any) -> Any:
    """``value`` with every non-finite float written as text ("-inf"): JSON has no infinity."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, Mapping):
        return {key: _finite(v) for key, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _embedded_json(value: Any) -> str:
    """JSON safe inside a <script> element (no "</script>", no "<!--")."""
    text = json.dumps(_finite(value), ensure_ascii=False, sort_keys=True, allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


_STYLE = """
body{font-family:system-ui,sans-serif;margin:1em;line-height:1.35;color:#111;max-width:80em}
h1{font-size:1.3em;margin:.2em 0} .note{color:#444;font-size:.9em}
#filters{display:flex;flex-wrap:wrap;gap:.6em;margin:.6em 0;padding:.5em;background:#f3f3f3;border-radius:4px}
#filters label{font-size:.85em} select{font-size:.9em}
#summary{font-weight:bold;margin:.4em 0} .tally{font-weight:normal;margin-left:.8em}
.card{border:1px solid #ccc;border-radius:4px;padding:.5em .7em;margin:.6em 0}
.card.control{border-left:6px solid #b58900;background:#fffbea}
.card.disagree{border-left:6px solid #c0392b}
.head{display:flex;flex-wrap:wrap;gap:.4em;align-items:baseline}
.badge{font-size:.78em;padding:.05em .4em;border-radius:3px;background:#e4e4e4}
.badge.flip{background:#f5c6cb} .badge.ctl{background:#f0d37a} .badge.human{background:#cfe3f7}
.badge.bad{background:#c0392b;color:#fff} .badge.ok{background:#2e8b57;color:#fff}
.texts{display:grid;grid-template-columns:repeat(auto-fit,minmax(22em,1fr));gap:.5em;margin:.4em 0}
.text{background:#fafafa;border:1px solid #e2e2e2;padding:.3em .5em;white-space:pre-wrap;font-size:.88em}
.text b{display:block;font-size:.85em;color:#555}
table.replies{border-collapse:collapse;font-size:.82em;width:100%}
table.replies td,table.replies th{border-top:1px solid #e2e2e2;padding:.15em .4em;vertical-align:top;text-align:left}
.raw{white-space:pre-wrap;font-family:monospace} .empty{color:#888;font-style:italic}
"""

_SCRIPT = r"""
const DATA = JSON.parse(document.getElementById('items').textContent);
const ITEMS = DATA.items, FILTERS = DATA.filters, MAX_SHOWN = DATA.max_shown;
function esc(s){return String(s).replace(/[&<>"]/g,c=>({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c]));}
function params(){const p={};const h=decodeURIComponent(location.hash.replace(/^#/,''));
  for(const part of h.split('&')){if(!part)continue;const i=part.indexOf('=');
    if(i>0)p[part.slice(0,i)]=part.slice(i+1);}return p;}
function values(key){const s=new Set();for(const it of ITEMS){
  if(key==='system')it.systems.forEach(v=>s.add(v));
  else if(key==='flip'){if(it.flip!==null)s.add(it.flip?'yes':'no');}
  else if(key==='human'){if(it.human!==null){s.add('labelled');s.add(it.human_agrees?'agree':'disagree');}}
  else if(it[key]!==null&&it[key]!==undefined)s.add(String(it[key]));}
  return [...s].sort();}
function matches(it,p){
  if(p.judge&&it.judge!==p.judge)return false;
  if(p.setting&&it.setting!==p.setting)return false;
  if(p.kind&&it.kind!==p.kind)return false;
  if(p.system&&!it.systems.includes(p.system))return false;
  if(p.verdict&&String(it.verdict)!==p.verdict)return false;
  if(p.flip&&(it.flip===null||(it.flip?'yes':'no')!==p.flip))return false;
  if(p.human){if(it.human===null)return false;
    if(p.human==='agree'&&!it.human_agrees)return false;
    if(p.human==='disagree'&&it.human_agrees)return false;}
  return true;}
function num(v){return typeof v==='number'?(Number.isInteger(v)?String(v):v.toFixed(3)):esc(v);}
function card(it){
  const cls=['card'];if(it.control)cls.push('control');if(it.human!==null&&!it.human_agrees)cls.push('disagree');
  let h=`<div class="${cls.join(' ')}" data-id="${esc(it.id)}"><div class="head"><b>${esc(it.title)}</b>`;
  h+=`<span class="badge">${esc(it.kind)}</span><span class="badge">judge ${esc(it.judge)}</span>`;
  if(it.setting)h+=`<span class="badge">${esc(it.setting)}</span>`;
  h+=`<span class="badge">verdict ${esc(it.verdict)}</span>`;
  for(const [rule,v] of Object.entries(it.verdicts))h+=`<span class="badge">${esc(rule)}: ${esc(v)}</span>`;
  if(it.flip)h+=`<span class="badge flip">order flipped the verdict</span>`;
  if(it.length_diff!==null)h+=`<span class="badge">length diff ${it.length_diff} chars</span>`;
  if(it.control)h+=`<span class="badge ctl">known-answer control: ${esc(it.control)}, expected ${esc(it.expected)}</span>`+
    `<span class="badge ${it.correct?'ok':'bad'}">${it.correct===null?'invalid':(it.correct?'correct':'wrong')}</span>`;
  if(it.human!==null)h+=`<span class="badge human">human: ${esc(it.human)}</span>`+
    `<span class="badge ${it.human_agrees?'ok':'bad'}">${it.human_agrees?'agrees':'disagrees'}</span>`;
  h+='</div><div class="texts">';
  for(const [label,text] of it.texts)h+=`<div class="text"><b>${esc(label)}</b>${text?esc(text):'<span class="empty">(empty)</span>'}</div>`;
  h+='</div><table class="replies"><tr><th>reply</th><th>raw text</th><th>scores</th></tr>';
  for(const [label,text,scores] of it.replies){
    const sc=scores?Object.entries(scores).filter(([k,v])=>v!==null).map(([k,v])=>`${esc(k)}=${num(v)}`).join(', '):'';
    h+=`<tr><td>${esc(label)}</td><td class="raw">${text?esc(text):'<span class="empty">(no text: '+(scores?'log-prob judge, scored only':'empty reply')+')</span>'}</td><td>${sc}</td></tr>`;}
  return h+'</table></div>';}
function render(){
  const p=params();
  for(const key of FILTERS){const el=document.getElementById('f-'+key);if(el)el.value=p[key]||'';}
  const shown=ITEMS.filter(it=>matches(it,p));
  document.getElementById('count').textContent=shown.length;
  const tally={};for(const it of shown)for(const [k,v] of Object.entries(it.tally))tally[k]=(tally[k]||0)+v;
  let t='';for(const k of DATA.tally_keys)t+=`<span class="tally">${esc(k)}: <span id="tally-${esc(k)}">${tally[k]||0}</span></span>`;
  document.getElementById('tallies').innerHTML=t;
  let body=shown.slice(0,MAX_SHOWN).map(card).join('');
  if(shown.length>MAX_SHOWN)body+=`<p class="note">The first ${MAX_SHOWN} of ${shown.length} are shown: narrow the filters to see the rest.</p>`;
  document.getElementById('list').innerHTML=body;}
function setFilter(){const parts=[];for(const key of FILTERS){const el=document.getElementById('f-'+key);
  if(el&&el.value)parts.push(key+'='+encodeURIComponent(el.value));}location.hash=parts.join('&');render();}
let f='';for(const key of FILTERS){const vs=values(key);if(!vs.length)continue;
  f+=`<label>${key} <select id="f-${key}"><option value="">all</option>`+vs.map(v=>`<option>${esc(v)}</option>`).join('')+'</select></label>';}
document.getElementById('filters').innerHTML=f;
for(const key of FILTERS){const el=document.getElementById('f-'+key);if(el)el.addEventListener('change',setFilter);}
window.addEventListener('hashchange',render);
render();
"""


def render_page(
    title: str,
    items: Sequence[Mapping[str, Any]],
    notes: Sequence[str] = (),
    tally_keys: Sequence[str] = (),
) -> str:
    """The page's HTML: ``notes`` (plain text paragraphs) above the filters and the items."""
    check_items(items)
    keys = list(tally_keys) or sorted({k for item in items for k in item["tally"]})
    data = {
        "items": list(items),
        "filters": list(FILTERS),
        "max_shown": MAX_SHOWN,
        "tally_keys": keys,
    }
    paragraphs = "".join(f'<p class="note">{html.escape(note)}</p>' for note in notes)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
        f'<h1>{html.escape(title)}</h1>{paragraphs}<div id="filters"></div>'
        f'<div id="summary"><span id="count">0</span> of {len(items)} items<span id="tallies"></span></div>'
        '<div id="list"></div>'
        f'<script type="application/json" id="items">{_embedded_json(data)}</script>'
        f"<script>{_SCRIPT}</script></body></html>\n"
    )


def write_browser(
    path: str | os.PathLike,
    title: str,
    items: Sequence[Mapping[str, Any]],
    notes: Sequence[str] = (),
    tally_keys: Sequence[str] = (),
) -> int:
    """Write the page atomically; returns the number of items."""
    write_text(path, render_page(title, items, notes, tally_keys))
    return len(items)
