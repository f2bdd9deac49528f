"""FTS5's ``porter unicode61 remove_diacritics 2`` tokenizer, in Python.

The in-memory full-text index (:mod:`mnemonic.index.fulltext`) must find and count exactly
the tokens SQLite's ``memories_fts`` table holds, or its BM25 scores drift from the SQL
path's. So this module reproduces SQLite's tokenizer rather than approximating it:

* **unicode61**: a token is a maximal run of token characters; everything else separates.
  ASCII token characters are ``[A-Za-z0-9]`` (``_``, ``-``, ``.`` separate: ``foo_bar`` is
  two tokens). Outside ASCII, which characters are token characters, which are
  "diacritics" (they continue a token and vanish, but never start one) and how each folds
  (lower case, then ``remove_diacritics 2`` strips accents from Latin letters) follow
  SQLite's own tables, which date from an older Unicode version than Python's
  ``unicodedata``: an emoji is a token character to SQLite, a Greek accent is kept. The
  tables below were read out of SQLite 3.40 by tokenizing every code point through FTS5
  (``fts5vocab``); ``tests/test_index_fulltext.py`` re-checks them against the linked
  SQLite. Their format: ``_KINDS`` is runs ``<first code point hex><kind>`` with kind
  ``s`` separator, ``T`` token character, ``d`` diacritic; ``_FOLDS`` is runs
  ``<first>[x<count>[/2]]<+-delta>``: ``count`` code points (every second one with
  ``/2``) fold to themselves plus ``delta``.
* **porter**: SQLite's Porter stemmer, which is not the Snowball "porter" algorithm
  (``snowballstemmer`` treats ``y`` differently, and has the 1980 paper's step 2, not
  SQLite's ``bli``/``logi`` rules); it works on UTF-8 bytes, stems tokens of 3 to 64
  bytes only, and treats every non-ASCII byte as a consonant. It is ported rule for rule.

Cost: tokenising is the start-up cost of the index (every stored memory), so the fold is
one ``str.translate`` (CPython has a fast path for ASCII text), splitting is ``str.split``
and stems are cached in a bounded dict. Everything is linear in the input length.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable

_KINDS = (
    "80s aaT abs b2T b4s b5T b6s b9T bbs bcT bfs c0T d7s d8T f7s f8T 2c2s 2c6T 2d2s 2e0T 2e5s "
    "2ecT 2eds 2eeT 2efs 300d 305s 306d 30ds 30fd 310s 311d 312s 31bd 31cs 323d 329s 32dd 32fs "
    "330d 332s 370T 375s 376T 37es 37fT 384s 386T 387s 388T 3f6s 3f7T 482s 48aT 55as 560T 589s "
    "58bT 58fs 590T 591s 5c8T 5f3s 5f5T 600s 605T 606s 61cT 61es 620T 64bs 660T 66as 66eT 670s "
    "671T 6d4s 6d5T 6d6s 6e5T 6e7s 6eeT 6fds 6ffT 700s 70eT 70fs 710T 711s 712T 730s 74bT 7a6s "
    "7b1T 7ebs 7f4T 7f6s 7faT 816s 81aT 81bs 824T 825s 828T 829s 82eT 830s 83fT 859s 85cT 85es "
    "85fT 8e4s 8ffT 900s 904T 93as 93dT 93es 950T 951s 958T 962s 966T 970s 971T 981s 984T 9bcs "
    "9bdT 9bes 9c5T 9c7s 9c9T 9cbs 9ceT 9d7s 9d8T 9e2s 9e4T 9f2s 9f4T 9fas 9fcT a01s a04T a3cs "
    "a3dT a3es a43T a47s a49T a4bs a4eT a51s a52T a70s a72T a75s a76T a81s a84T abcs abdT abes "
    "ac6T ac7s acaT acbs aceT ae2s ae4T af0s af2T b01s b04T b3cs b3dT b3es b45T b47s b49T b4bs "
    "b4eT b56s b58T b62s b64T b70s b71T b82s b83T bbes bc3T bc6s bc9T bcas bceT bd7s bd8T bf3s "
    "bfbT c01s c04T c3es c45T c46s c49T c4as c4eT c55s c57T c62s c64T c7fs c80T c82s c84T cbcs "
    "cbdT cbes cc5T cc6s cc9T ccas cceT cd5s cd7T ce2s ce4T d02s d04T d3es d45T d46s d49T d4as "
    "d4eT d57s d58T d62s d64T d79s d7aT d82s d84T dcas dcbT dcfs dd5T dd6s dd7T dd8s de0T df2s "
    "df5T e31s e32T e34s e3bT e3fs e40T e47s e50T e5as e5cT eb1s eb2T eb4s ebaT ebbs ebdT ec8s "
    "eceT f01s f20T f34s f40T f71s f88T f8ds f98T f99s fbdT fbes fcdT fces fdbT 102bs 103fT 104as "
    "1050T 1056s 105aT 105es 1061T 1062s 1065T 1067s 106eT 1071s 1075T 1082s 108eT 108fs 1090T "
    "109as 10a0T 10fbs 10fcT 135ds 1369T 1390s 139aT 1400s 1401T 166ds 166fT 1680s 1681T 169bs "
    "169dT 16ebs 16eeT 1712s 1715T 1732s 1737T 1752s 1754T 1772s 1774T 17b4s 17d7T 17d8s 17dcT "
    "17dds 17deT 1800s 180fT 18a9s 18aaT 1920s 192cT 1930s 193cT 1940s 1941T 1944s 1946T 19b0s "
    "19c1T 19c8s 19caT 19des 1a00T 1a17s 1a1cT 1a1es 1a20T 1a55s 1a5fT 1a60s 1a7dT 1a7fs 1a80T "
    "1aa0s 1aa7T 1aa8s 1aaeT 1b00s 1b05T 1b34s 1b45T 1b5as 1b7dT 1b80s 1b83T 1ba1s 1baeT 1be6s "
    "1bf4T 1bfcs 1c00T 1c24s 1c38T 1c3bs 1c40T 1c7es 1c80T 1cc0s 1cc8T 1cd0s 1ce9T 1ceds 1ceeT "
    "1cf2s 1cf5T 1dc0s 1de7T 1dfcs 1e00T 1fbds 1fbeT 1fbfs 1fc2T 1fcds 1fd0T 1fdds 1fe0T 1feds "
    "1ff0T 1ffds 1fffT 2000s 2065T 206as 2070T 207as 207fT 208as 208fT 20a0s 20baT 20d0s 20f1T "
    "2100s 2102T 2103s 2107T 2108s 210aT 2114s 2115T 2116s 2119T 211es 2124T 2125s 2126T 2127s "
    "2128T 2129s 212aT 212es 212fT 213as 213cT 2140s 2145T 214as 214eT 214fs 2150T 2190s 23f4T "
    "2400s 2427T 2440s 244bT 249cs 24eaT 2500s 2700T 2701s 2776T 2794s 2b4dT 2b50s 2b5aT 2ce5s "
    "2cebT 2cefs 2cf2T 2cf9s 2cfdT 2cfes 2d00T 2d70s 2d71T 2d7fs 2d80T 2de0s 2e2fT 2e30s 2e3cT "
    "2e80s 2e9aT 2e9bs 2ef4T 2f00s 2fd6T 2ff0s 2ffcT 3000s 3005T 3008s 3021T 302as 3031T 3036s "
    "3038T 303ds 3040T 3099s 309dT 30a0s 30a1T 30fbs 30fcT 3190s 3192T 3196s 31a0T 31c0s 31e4T "
    "3200s 321fT 322as 3248T 3250s 3251T 3260s 3280T 328as 32b1T 32c0s 32ffT 3300s 3400T 4dc0s "
    "4e00T a490s a4c7T a4fes a500T a60ds a610T a66fs a67fT a69fs a6a0T a6f0s a6f8T a700s a717T "
    "a720s a722T a789s a78bT a802s a803T a806s a807T a80bs a80cT a823s a82cT a836s a83aT a874s "
    "a878T a880s a882T a8b4s a8c5T a8ces a8d0T a8e0s a8f2T a8f8s a8fbT a926s a930T a947s a954T "
    "a95fs a960T a980s a984T a9b3s a9ceT a9des a9e0T aa29s aa37T aa43s aa44T aa4cs aa4eT aa5cs "
    "aa60T aa77s aa7aT aa7bs aa7cT aab0s aab1T aab2s aab5T aab7s aab9T aabes aac0T aac1s aac2T "
    "aades aae0T aaebs aaf2T aaf5s aaf7T abe3s abeeT d800s e000T fb1es fb1fT fb29s fb2aT fbb2s "
    "fbc2T fd3es fd40T fdfcs fdfeT fe00s fe1aT fe20s fe27T fe30s fe53T fe54s fe67T fe68s fe6cT "
    "feffs ff00T ff01s ff10T ff1as ff21T ff3bs ff41T ff5bs ff66T ffe0s ffe7T ffe8s ffefT fff9s "
    "10000T 10100s 10103T 10137s 10140T 10179s 1018aT 10190s 1019cT 101d0s 101feT 1039fs 103a0T "
    "103d0s 103d1T 10857s 10858T 1091fs 10920T 1093fs 10940T 10a01s 10a04T 10a05s 10a07T 10a0cs "
    "10a10T 10a38s 10a3bT 10a3fs 10a40T 10a50s 10a59T 10a7fs 10a80T 10b39s 10b40T 11000s 11003T "
    "11038s 1104eT 11080s 11083T 110b0s 110c2T 11100s 11103T 11127s 11135T 11140s 11144T 11180s "
    "11183T 111b3s 111c1T 111c5s 111c9T 116abs 116b8T 12470s 12474T 16f51s 16f7fT 16f8fs 16f93T "
    "1d000s 1d0f6T 1d100s 1d127T 1d129s 1d1deT 1d200s 1d246T 1d300s 1d357T 1d6c1s 1d6c2T 1d6dbs "
    "1d6dcT 1d6fbs 1d6fcT 1d715s 1d716T 1d735s 1d736T 1d74fs 1d750T 1d76fs 1d770T 1d789s 1d78aT "
    "1d7a9s 1d7aaT 1d7c3s 1d7c4T 1eef0s 1eef2T 1f000s 1f02cT 1f030s 1f094T 1f0a0s 1f0afT 1f0b1s "
    "1f0bfT 1f0c1s 1f0d0T 1f0d1s 1f0e0T 1f110s 1f12fT 1f130s 1f16cT 1f170s 1f19bT 1f1e6s 1f203T "
    "1f210s 1f23bT 1f240s 1f249T 1f250s 1f252T 1f300s 1f321T 1f330s 1f336T 1f337s 1f37dT 1f380s "
    "1f394T 1f3a0s 1f3c5T 1f3c6s 1f3cbT 1f3e0s 1f3f1T 1f400s 1f43fT 1f440s 1f441T 1f442s 1f4f8T "
    "1f4f9s 1f4fdT 1f500s 1f53eT 1f540s 1f544T 1f550s 1f568T 1f5fbs 1f641T 1f645s 1f650T 1f680s "
    "1f6c6T 1f700s 1f774T e0001s e0002T e0020s e0080T e0100s e01f0T "
)
_FOLDS = (
    "b5+307 c0-5f c1-60 c2-61 c3-62 c4-63 c5-64 c6+20 c7-64 c8-63 c9-64 ca-65 cb-66 cc-63 cd-64 "
    "ce-65 cf-66 d0+20 d1x2-63 d3-64 d4-65 d5-66 d6-67 d8+20 d9-64 da-65 db-66 dc-67 dd-64 de+20 "
    "e0-7f e1-80 e2-81 e3-82 e4-83 e5x2/2-84 e8-83 e9-84 ea-85 eb-86 ec-83 ed-84 ee-85 ef-86 "
    "f1x2-83 f3-84 f4-85 f5-86 f6-87 f9-84 fa-85 fb-86 fc-87 fd-84 ff-86 100-9f 101-a0 102-a1 "
    "103-a2 104-a3 105-a4 106-a3 107-a4 108-a5 109-a6 10a-a7 10b-a8 10c-a9 10dx2-aa 10f-ab 110+1 "
    "112-ad 113-ae 114-af 115-b0 116-b1 117-b2 118-b3 119-b4 11a-b5 11b-b6 11c-b5 11d-b6 11e-b7 "
    "11f-b8 120-b9 121-ba 122-bb 123x2-bc 125-bd 126+1 128-bf 129-c0 12a-c1 12b-c2 12c-c3 12d-c4 "
    "12e-c5 12f-c6 130-c7 132+1 134-ca 135x2-cb 137-cc 139-cd 13a-ce 13b-cf 13c-d0 13d-d1 13e-d2 "
    "13fx2/2+1 143-d5 144-d6 145-d7 146-d8 147-d9 148-da 14a+1 14c-dd 14d-de 14e-df 14f-e0 150-e1 "
    "151-e2 152+1 154-e2 155-e3 156-e4 157-e5 158-e6 159x2-e7 15b-e8 15c-e9 15d-ea 15e-eb 15f-ec "
    "160-ed 161x2-ee 163-ef 164-f0 165-f1 166+1 168-f3 169-f4 16a-f5 16b-f6 16c-f7 16d-f8 16e-f9 "
    "16f-fa 170-fb 171-fc 172-fd 173-fe 174-fd 175-fe 176-fd 177-fe 178x2-ff 17a-100 17b-101 "
    "17c-102 17d-103 17e-104 17f-10c 181+d2 182x2/2+1 186+ce 187+1 189x2+cd 18b+1 18e+4f 18f+ca "
    "190+cb 191+1 193+cd 194+cf 196+d3 197+d1 198+1 19c+d3 19d+d5 19f+d6 1a0-131 1a1-132 "
    "1a2x2/2+1 1a6+da 1a7+1 1a9+da 1ac+1 1ae+da 1af-13a 1b0-13b 1b1x2+d9 1b3x2/2+1 1b7+db 1b8+1 "
    "1bc+1 1c4+2 1c5+1 1c7+2 1c8+1 1ca+2 1cb+1 1cd-16c 1ce-16d 1cf-166 1d0-167 1d1-162 1d2-163 "
    "1d3-15e 1d4-15f 1d5-160 1d6-161 1d7-162 1d8-163 1d9-164 1da-165 1db-166 1dc-167 1de-17d "
    "1df-17e 1e0x3/2+1 1e6-17f 1e7-180 1e8-17d 1e9-17e 1ea-17b 1eb-17c 1ec-17d 1ed-17e 1ee+1 "
    "1f0-186 1f1+2 1f2+1 1f4-18d 1f5-18e 1f6-61 1f7-38 1f8-18a 1f9-18b 1fa-199 1fb-19a 1fcx2/2+1 "
    "200-19f 201-1a0 202-1a1 203-1a2 204-19f 205-1a0 206-1a1 207-1a2 208-19f 209-1a0 20a-1a1 "
    "20b-1a2 20c-19d 20d-19e 20e-19f 20f-1a0 210-19e 211-19f 212-1a0 213-1a1 214-19f 215-1a0 "
    "216-1a1 217-1a2 218-1a5 219x2-1a6 21b-1a7 21c+1 21e-1b6 21f-1b7 220-82 222x2/2+1 226-1c5 "
    "227-1c6 228-1c3 229-1c4 22a-1bb 22b-1bc 22c-1bd 22d-1be 22e-1bf 22f-1c0 230-1c1 231-1c2 "
    "232-1b9 233-1ba 23a+2a2b 23b+1 23d-a3 23e+2a28 241+1 243-c3 244+45 245+47 246x5/2+1 "
    "370x2/2+1 376+1 386+26 388x3+25 38c+40 38ex2+3f 391x17+20 3a3x9+20 3c2+1 3cf+8 3d0-1e 3d1-19 "
    "3d5-f 3d6-16 3d8x12/2+1 3f0-36 3f1-30 3f4-3c 3f5-40 3f7+1 3f9-7 3fa+1 3fdx3-82 400x16+50 "
    "410x32+20 460x17/2+1 48ax27/2+1 4c0+f 4c1x7/2+1 4d0x44/2+1 531x38+30 10a0x38+1c60 10c7+1c60 "
    "10cd+1c60 1e00-1d9f 1e01x2-1da0 1e03-1da1 1e04-1da2 1e05-1da3 1e06-1da4 1e07x2-1da5 "
    "1e09x2-1da6 1e0b-1da7 1e0c-1da8 1e0d-1da9 1e0e-1daa 1e0f-1dab 1e10-1dac 1e11-1dad 1e12-1dae "
    "1e13x2-1daf 1e15-1db0 1e16-1db1 1e17-1db2 1e18-1db3 1e19-1db4 1e1a-1db5 1e1b-1db6 1e1c-1db7 "
    "1e1dx2-1db8 1e1fx2-1db9 1e21x2-1dba 1e23-1dbb 1e24-1dbc 1e25-1dbd 1e26-1dbe 1e27-1dbf "
    "1e28-1dc0 1e29-1dc1 1e2a-1dc2 1e2bx2-1dc3 1e2d-1dc4 1e2e-1dc5 1e2f-1dc6 1e30-1dc5 1e31-1dc6 "
    "1e32-1dc7 1e33-1dc8 1e34-1dc9 1e35x2-1dca 1e37-1dcb 1e38-1dcc 1e39-1dcd 1e3a-1dce 1e3b-1dcf "
    "1e3c-1dd0 1e3dx2-1dd1 1e3f-1dd2 1e40-1dd3 1e41-1dd4 1e42-1dd5 1e43x2-1dd6 1e45-1dd7 "
    "1e46-1dd8 1e47-1dd9 1e48-1dda 1e49-1ddb 1e4a-1ddc 1e4bx2-1ddd 1e4d-1dde 1e4e-1ddf 1e4f-1de0 "
    "1e50-1de1 1e51-1de2 1e52-1de3 1e53x2-1de4 1e55-1de5 1e56-1de6 1e57-1de7 1e58-1de6 1e59-1de7 "
    "1e5a-1de8 1e5b-1de9 1e5c-1dea 1e5d-1deb 1e5e-1dec 1e5fx2-1ded 1e61-1dee 1e62-1def 1e63-1df0 "
    "1e64-1df1 1e65-1df2 1e66-1df3 1e67-1df4 1e68-1df5 1e69x2-1df6 1e6b-1df7 1e6c-1df8 1e6d-1df9 "
    "1e6e-1dfa 1e6f-1dfb 1e70-1dfc 1e71x2-1dfd 1e73-1dfe 1e74-1dff 1e75-1e00 1e76-1e01 1e77-1e02 "
    "1e78-1e03 1e79-1e04 1e7a-1e05 1e7bx2-1e06 1e7d-1e07 1e7e-1e08 1e7fx2-1e09 1e81-1e0a "
    "1e82-1e0b 1e83-1e0c 1e84-1e0d 1e85-1e0e 1e86-1e0f 1e87-1e10 1e88-1e11 1e89x2-1e12 1e8b-1e13 "
    "1e8c-1e14 1e8dx2-1e15 1e8fx2-1e16 1e91-1e17 1e92-1e18 1e93-1e19 1e94-1e1a 1e95-1e1b "
    "1e96-1e2e 1e97-1e23 1e98-1e21 1e99-1e20 1e9b-1e28 1e9e-1dbf 1ea0-1e3f 1ea1-1e40 1ea2-1e41 "
    "1ea3-1e42 1ea4-1e43 1ea5-1e44 1ea6-1e45 1ea7-1e46 1ea8-1e47 1ea9-1e48 1eaa-1e49 1eab-1e4a "
    "1eac-1e4b 1ead-1e4c 1eae-1e4d 1eaf-1e4e 1eb0-1e4f 1eb1-1e50 1eb2-1e51 1eb3-1e52 1eb4-1e53 "
    "1eb5-1e54 1eb6-1e55 1eb7-1e56 1eb8-1e53 1eb9-1e54 1eba-1e55 1ebb-1e56 1ebc-1e57 1ebd-1e58 "
    "1ebe-1e59 1ebf-1e5a 1ec0-1e5b 1ec1-1e5c 1ec2-1e5d 1ec3-1e5e 1ec4-1e5f 1ec5-1e60 1ec6-1e61 "
    "1ec7-1e62 1ec8-1e5f 1ec9-1e60 1eca-1e61 1ecb-1e62 1ecc-1e5d 1ecd-1e5e 1ece-1e5f 1ecf-1e60 "
    "1ed0-1e61 1ed1-1e62 1ed2-1e63 1ed3-1e64 1ed4-1e65 1ed5-1e66 1ed6-1e67 1ed7-1e68 1ed8-1e69 "
    "1ed9-1e6a 1eda-1e6b 1edb-1e6c 1edc-1e6d 1edd-1e6e 1ede-1e6f 1edf-1e70 1ee0-1e71 1ee1-1e72 "
    "1ee2-1e73 1ee3-1e74 1ee4-1e6f 1ee5-1e70 1ee6-1e71 1ee7-1e72 1ee8-1e73 1ee9-1e74 1eea-1e75 "
    "1eeb-1e76 1eec-1e77 1eed-1e78 1eee-1e79 1eef-1e7a 1ef0-1e7b 1ef1-1e7c 1ef2-1e79 1ef3-1e7a "
    "1ef4-1e7b 1ef5-1e7c 1ef6-1e7d 1ef7-1e7e 1ef8-1e7f 1ef9-1e80 1efax3/2+1 1f08x8-8 1f18x6-8 "
    "1f28x8-8 1f38x8-8 1f48x6-8 1f59x4/2-8 1f68x8-8 1f88x8-8 1f98x8-8 1fa8x8-8 1fb8x2-8 1fbax2-4a "
    "1fbc-9 1fbe-1c05 1fc8x4-56 1fcc-9 1fd8x2-8 1fdax2-64 1fe8x2-8 1feax2-70 1fec-7 1ff8x2-80 "
    "1ffax2-7e 1ffc-9 2126-1d5d 212a-20bf 212b-20ca 2132+1c 2160x16+10 2183+1 2c00x47+30 2c60+1 "
    "2c62-29f7 2c63-ee6 2c64-29e7 2c67x3/2+1 2c6d-2a1c 2c6e-29fd 2c6f-2a1f 2c70-2a1e 2c72+1 "
    "2c75+1 2c7ex2-2a3f 2c80x50/2+1 2cebx2/2+1 2cf2+1 a640x23/2+1 a680x12/2+1 a722x7/2+1 "
    "a732x31/2+1 a779x2/2+1 a77d-8a04 a77ex5/2+1 a78b+1 a78d-a528 a790x2/2+1 a7a0x5/2+1 a7aa-a544 "
    "ff21x26+20 10400x40+28 "
)

_SEPARATOR, _TOKEN, _DIACRITIC = "s", "T", "d"


def _parse_kinds() -> tuple[list[int], str]:
    starts: list[int] = []
    kinds: list[str] = []
    for run in "".join(_KINDS).split():
        starts.append(int(run[:-1], 16))
        kinds.append(run[-1])
    return starts, "".join(kinds)


def _parse_folds() -> dict[int, int]:
    folds: dict[int, int] = {}
    for run in "".join(_FOLDS).split():
        sign = "+" if "+" in run else "-"
        head, delta_hex = run.split(sign)
        delta = int(delta_hex, 16) * (1 if sign == "+" else -1)
        count, step = 1, 1
        if "x" in head:
            head, tail = head.split("x")
            if "/" in tail:
                tail, step_text = tail.split("/")
                step = int(step_text)
            count = int(tail)
        first = int(head, 16)
        for i in range(count):
            folds[first + i * step] = first + i * step + delta
    return folds


_KIND_STARTS, _KIND_CODES = _parse_kinds()
_FOLD = _parse_folds()
_CACHE_LIMIT = 50_000


def char_kind(code: int) -> str:
    """``"s"`` (separator), ``"T"`` (token character) or ``"d"`` (diacritic) for FTS5."""
    if code < 0x80:
        return _TOKEN if chr(code).isalnum() else _SEPARATOR
    return _KIND_CODES[bisect.bisect_right(_KIND_STARTS, code) - 1]


class _FoldTable(dict[int, str]):
    """``str.translate`` table: a token character to its folded form, a separator to a
    space, a diacritic to nothing. Filled on demand (Unicode has 1.1M code points) and
    bounded, so hostile text cannot grow it without limit."""

    def __missing__(self, code: int) -> str:
        kind = char_kind(code)
        if kind == _SEPARATOR:
            out = " "
        elif kind == _DIACRITIC:
            out = ""
        else:
            out = chr(_FOLD.get(code, code))
        if len(self) < _CACHE_LIMIT:
            self[code] = out
        return out


_TABLE = _FoldTable()
for _code in range(0x80):
    _c = chr(_code)
    _TABLE[_code] = _c.lower() if _c.isalnum() else " "


def raw_tokens(text: str) -> list[str]:
    """unicode61 tokens of ``text`` (folded, diacritics removed), before stemming."""
    return text.translate(_TABLE).split()


# ---- SQLite's Porter stemmer -----------------------------------------------------------------


def _is_vowel(c: str, y_is_vowel: bool) -> bool:
    return c in "aeiou" or (y_is_vowel and c == "y")


def _gobble_vc(stem: str, start: int, end: int, prev_consonant: bool) -> int:
    """Index just past the first vowel-then-consonant sequence in ``stem[start:end]``
    (relative to ``start``), or 0 when there is none."""
    consonant = prev_consonant
    i = start
    while i < end:
        consonant = not _is_vowel(stem[i], consonant)
        if not consonant:
            break
        i += 1
    i += 1
    while i < end:
        consonant = not _is_vowel(stem[i], consonant)
        if consonant:
            return i + 1 - start
        i += 1
    return 0


def _m_gt0(stem: str, n: int) -> bool:
    return _gobble_vc(stem, 0, n, False) != 0


def _m_gt1(stem: str, n: int) -> bool:
    k = _gobble_vc(stem, 0, n, False)
    return k != 0 and _gobble_vc(stem, k, n, True) != 0


def _m_eq1(stem: str, n: int) -> bool:
    k = _gobble_vc(stem, 0, n, False)
    return k != 0 and _gobble_vc(stem, k, n, True) == 0


def _o_star(stem: str, n: int) -> bool:
    if stem[n - 1] in "wxy":
        return False
    mask = 0
    consonant = False
    for i in range(n):
        consonant = not _is_vowel(stem[i], consonant)
        mask = ((mask << 1) | consonant) & 7
    return mask == 5


def _m_gt1_s_or_t(stem: str, n: int) -> bool:
    return stem[n - 1] in "st" and _m_gt1(stem, n)


def _has_vowel(stem: str, n: int) -> bool:
    return any(_is_vowel(stem[i], i > 0) for i in range(n))


_Cond = Callable[[str, int], bool]
_STEP2: tuple[tuple[str, str], ...] = (
    ("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"),
    ("izer", "ize"), ("logi", "log"), ("bli", "ble"), ("alli", "al"), ("entli", "ent"),
    ("eli", "e"), ("ousli", "ous"), ("ization", "ize"), ("ation", "ate"), ("ator", "ate"),
    ("alism", "al"), ("iveness", "ive"), ("fulness", "ful"), ("ousness", "ous"),
    ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"),
)  # fmt: skip
_STEP3: tuple[tuple[str, str], ...] = (
    ("ical", "ic"), ("ness", ""), ("icate", "ic"), ("iciti", "ic"), ("ful", ""),
    ("ative", ""), ("alize", "al"),
)  # fmt: skip
_STEP4: tuple[tuple[str, _Cond], ...] = (
    ("al", _m_gt1), ("ance", _m_gt1), ("ence", _m_gt1), ("er", _m_gt1), ("ic", _m_gt1),
    ("able", _m_gt1), ("ible", _m_gt1), ("ant", _m_gt1), ("ement", _m_gt1),
    ("ment", _m_gt1), ("ent", _m_gt1), ("ion", _m_gt1_s_or_t), ("ou", _m_gt1),
    ("ism", _m_gt1), ("ate", _m_gt1), ("iti", _m_gt1), ("ous", _m_gt1), ("ive", _m_gt1),
    ("ize", _m_gt1),
)  # fmt: skip


def _replace(word: str, rules: tuple[tuple[str, str], ...], cond: _Cond) -> str:
    """SQLite's generated steps: the first rule whose suffix matches (with at least one
    character before it) decides; its condition holds on the stem or nothing changes."""
    n = len(word)
    for suffix, output in rules:
        if n > len(suffix) and word.endswith(suffix):
            stem = n - len(suffix)
            return word[:stem] + output if cond(word, stem) else word
    return word


def _step4(word: str) -> str:
    n = len(word)
    for suffix, cond in _STEP4:
        if n > len(suffix) and word.endswith(suffix):
            stem = n - len(suffix)
            return word[:stem] if cond(word, stem) else word
    return word


def _step1a(w: str) -> str:
    n = len(w)
    if w[n - 1] == "s":
        if w[n - 2] == "e":
            if (n > 4 and w[n - 4] == "s" and w[n - 3] == "s") or (n > 3 and w[n - 3] == "i"):
                return w[: n - 2]
            return w[: n - 1]
        if w[n - 2] != "s":
            return w[: n - 1]
    return w


def _step1b(w: str) -> tuple[str, bool]:
    n = len(w)
    if n > 3 and w.endswith("eed"):
        return (w[:-1] if _m_gt0(w, n - 3) else w), False
    if n > 2 and w.endswith("ed"):
        return (w[:-2], True) if _has_vowel(w, n - 2) else (w, False)
    if n > 3 and w.endswith("ing"):
        return (w[:-3], True) if _has_vowel(w, n - 3) else (w, False)
    return w, False


def _porter(w: str) -> str:
    """SQLite's ``fts5PorterCb`` on a token of 3..64 bytes (one char per byte)."""
    w = _step1a(w)
    w, removed = _step1b(w)
    if removed:
        n = len(w)
        if n > 2 and (w.endswith("at") or w.endswith("bl") or w.endswith("iz")):
            w += "e"
        else:
            c = w[n - 1]
            if n > 1 and not _is_vowel(c, False) and c not in "lsz" and c == w[n - 2]:
                w = w[: n - 1]
            elif _m_eq1(w, n) and _o_star(w, n):
                w += "e"
    n = len(w)
    if w[n - 1] == "y" and _has_vowel(w, n - 1):
        w = w[: n - 1] + "i"
    w = _replace(w, _STEP2, _m_gt0)
    w = _replace(w, _STEP3, _m_gt0)
    w = _step4(w)
    n = len(w)
    if w[n - 1] == "e" and (_m_gt1(w, n - 1) or (_m_eq1(w, n - 1) and not _o_star(w, n - 1))):
        w = w[: n - 1]
        n -= 1
    if n > 1 and w[n - 1] == "l" and w[n - 2] == "l" and _m_gt1(w, n - 1):
        w = w[: n - 1]
    return w


_MIN_STEM, _MAX_STEM = 3, 64
_STEMS: dict[str, str] = {}
_STEM_CACHE_LIMIT = 200_000


def stem(token: str) -> str:
    """SQLite's Porter stem of one folded token (cached)."""
    out = _STEMS.get(token)
    if out is not None:
        return out
    if token.isascii():
        out = _porter(token) if _MIN_STEM <= len(token) <= _MAX_STEM else token
    else:
        raw = token.encode("utf-8", "surrogateescape")
        if _MIN_STEM <= len(raw) <= _MAX_STEM:
            # One char per byte, so every rule sees what SQLite's byte-wise C code sees;
            # a stem cut inside a UTF-8 sequence survives as surrogate escapes.
            stemmed = _porter(raw.decode("latin-1")).encode("latin-1")
            out = stemmed.decode("utf-8", "surrogateescape")
        else:
            out = token
    if len(_STEMS) >= _STEM_CACHE_LIMIT:
        _STEMS.clear()
    _STEMS[token] = out
    return out


_ASCII = bytes(
    (c + 32 if 65 <= c <= 90 else c) if (48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122) else 32
    for c in range(256)
)
"""unicode61 on ASCII: letters and digits are token characters (folded to lower case),
every other byte separates; ``bytes.translate`` applies it in C, 5-10x faster than
``str.translate`` with the full table, and most memories are ASCII."""


def tokens(text: str) -> list[str]:
    """The tokens FTS5 (``porter unicode61 remove_diacritics 2``) stores for ``text``."""
    cache = _STEMS
    if text.isascii():
        parts = text.encode("ascii").translate(_ASCII).decode("ascii").split()
    else:
        parts = text.translate(_TABLE).split()
    out = []
    for token in parts:
        s = cache.get(token)
        out.append(s if s is not None else stem(token))
    return out
