package repair

// repairCase is one hand-written repair: the input, the exact compact JSON
// expected, the repairs expected (space-separated, in order) and whether
// the value had to be closed.
type repairCase struct {
	name    string
	in      string
	want    string
	repairs string
	trunc   bool
}

// repairCases covers every repair, the adversarial inputs agents produce
// (strings that look like Python, comments or fences; prose with braces),
// and truncation at every kind of token.
var repairCases = []repairCase{
	// Valid JSON: same value, compacted, no repairs.
	{"valid object", `{"a": 1, "b": [true, false, null]}`, `{"a":1,"b":[true,false,null]}`, "", false},
	{"valid indented", "{\n  \"a\": {\n    \"b\": \"c\"\n  }\n}\n", `{"a":{"b":"c"}}`, "", false},
	{"valid array", `[1, 2.5, -3e10, "x"]`, `[1,2.5,-3e10,"x"]`, "", false},
	{"valid string", `"hello"`, `"hello"`, "", false},
	{"valid number", ` 42 `, `42`, "", false},
	{"valid true", `true`, `true`, "", false},
	{"valid null", `null`, `null`, "", false},
	{"valid empty object", `{}`, `{}`, "", false},
	{"valid empty array", `[ ]`, `[]`, "", false},
	{"valid exponent kept", `[1.0E+2]`, `[1.0E+2]`, "", false},
	{"valid string with True None", `{"s": "True or None"}`, `{"s":"True or None"}`, "", false},
	{"valid unicode escapes", `{"s": "\u00e9\ud83d\ude00"}`, `{"s":"\u00e9\ud83d\ude00"}`, "", false},
	{"valid raw unicode", `{"s": "é😀"}`, `{"s":"é😀"}`, "", false},

	// bom
	{"bom valid", "\ufeff{\"a\":1}", `{"a":1}`, "bom", false},
	{"bom broken", "\ufeff{'a':1}", `{"a":1}`, "bom single_quotes", false},

	// code_fence
	{"fence json", "```json\n{\"a\": 1}\n```", `{"a":1}`, "code_fence", false},
	{"fence bare", "```\n{\"a\": 1}\n```", `{"a":1}`, "code_fence", false},
	{"fence JSON upper", "```JSON\n[1]\n```", `[1]`, "code_fence", false},
	{"fence with prose", "Here you go:\n```json\n{\"a\": 1}\n```\nDone.", `{"a":1}`, "code_fence prose", false},
	{"fence preferred over later prose object", "```json\n{\"a\": 1}\n```\nor maybe {\"b\": 2}", `{"a":1}`, "code_fence prose", false},
	{"json fence preferred over python fence", "```python\n{'x': 1}\n```\n```json\n{\"a\": 1}\n```", `{"a":1}`, "code_fence concatenated", false},
	{"fence in string", "```json\n{\"code\": \"```python\\nprint(1)\\n```\"}\n```", "{\"code\":\"```python\\nprint(1)\\n```\"}", "code_fence", false},
	{"fence in raw string", "```json\n{\"md\": \"a\n```\nb\"}\n```", "{\"md\":\"a\\n```\\nb\"}", "code_fence control_chars", false},
	{"fence inline", "```json {\"a\": 1}```", `{"a":1}`, "code_fence", false},
	{"fence string encoded", "```json\n\"{\\\"a\\\": 1}\"\n```", `{"a":1}`, "code_fence string_encoded_json", false},
	{"fence scalar", "```json\n42\n```", `42`, "code_fence", false},
	{"fence broken inside", "```json\n{'a': True,}\n```", `{"a":true}`, "code_fence single_quotes python_literals trailing_comma", false},
	{"fence closed on cut value", "```json\n{\"a\": 1, \"b\": [2\n```", `{"a":1,"b":[2]}`, "code_fence truncated", true},
	{"fence unclosed", "```json\n{\"a\": 1}", `{"a":1}`, "code_fence", false},
	{"two fences last wins", "```json\n{\"a\": 1}\n```\n```json\n{\"a\": 2}\n```", `{"a":2}`, "code_fence concatenated", false},

	// prose
	{"prose around", `Here is the result: {"a": 1} Hope this helps!`, `{"a":1}`, "prose", false},
	{"prose before", `Result: [1, 2]`, `[1,2]`, "prose", false},
	{"prose apostrophe", `It's done, here's the JSON: {"ok": true}`, `{"ok":true}`, "prose", false},
	{"prose braces before", `Use {name} placeholders. {"a": 1}`, `{"a":1}`, "prose", false},
	{"prose double braces", `Template {{x}} gives {"a": 1}`, `{"a":1}`, "prose", false},
	{"prose footnote before", `As shown in [1], the answer is {"a": 1}`, `{"a":1}`, "prose", false},
	{"prose footnote after", `The answer is {"a": 1} as in [2].`, `{"a":1}`, "prose", false},
	{"prose brace after", `{"a": 1} and then f() {`, `{"a":1}`, "prose", false},
	{"prose apostrophes and braces", `I'd say {it's} fine: {"a": "it's"}`, `{"a":"it's"}`, "prose", false},
	{"prose True word", `True story: {"a": 1}`, `{"a":1}`, "prose", false},
	{"prose None word", `None of that, just {"a": 1}`, `{"a":1}`, "prose", false},
	{"prose number", `Step 2 of 3: {"a": 1}`, `{"a":1}`, "prose", false},
	{"prose quoted word", `"Done" she said {"a": 1}`, `{"a":1}`, "prose", false},
	{"prose with broken JSON before valid", `First try {"a": [1, x]} then {"b": 2}`, `{"b":2}`, "prose", false},
	{"prose nested fragment not taken", `{"a": {"b": 1}, x} and no more`, ``, "", false},
	{"prose object preferred over later array", `{"a": 1} see [3]`, `{"a":1}`, "prose", false},
	{"prose multiline", "Sure!\n\n{\n  \"a\": 1\n}\n\nLet me know.", `{"a":1}`, "prose", false},
	{"prose url before", `See http://example.com/{id} for {"a": 1}`, `{"a":1}`, "prose", false},

	// comments
	{"line comment", "{\"a\": 1, // one\n\"b\": 2}", `{"a":1,"b":2}`, "comments", false},
	{"block comment", `{"a": /* the a */ 1}`, `{"a":1}`, "comments", false},
	{"comment before key", "{\n// first\n\"a\": 1}", `{"a":1}`, "comments", false},
	{"unterminated block comment", `{"a": 1 /* open`, `{"a":1}`, "comments truncated", true},
	{"url not comment", `{"u": "http://x.org/a//b"}`, `{"u":"http://x.org/a//b"}`, "", false},
	{"url not comment broken", `{'u': 'http://x.org/*y*/'}`, `{"u":"http://x.org/*y*/"}`, "single_quotes", false},
	{"comment markers in string", `{"c": "// not /* a */ comment",}`, `{"c":"// not /* a */ comment"}`, "trailing_comma", false},

	// python_literals
	{"python True", `{"a": True}`, `{"a":true}`, "python_literals", false},
	{"python False None", `[False, None]`, `[false,null]`, "python_literals", false},
	{"python dict", `{'a': True, 'b': None, 'c': [1, 2]}`, `{"a":true,"b":null,"c":[1,2]}`, "single_quotes python_literals", false},
	{"python top None", `None`, `null`, "python_literals", false},
	{"python words in strings kept", `{"a": "True", "b": 'None', "c": False}`, `{"a":"True","b":"None","c":false}`, "single_quotes python_literals", false},
	{"python key True stays key", `{True: 1}`, `{"True":1}`, "unquoted_keys", false},
	{"unknown word", `{"a": yes}`, `{"a":"yes"}`, "unquoted_value", false},
	{"bare value ends at the next key", `{"key":value "key2":"value2" }`, `{"key":"value","key2":"value2"}`, "unquoted_value missing_comma", false},
	{"bare value keeps a quote that starts no key", `{"a": say "hi" now}`, `{"a":"say \"hi\" now"}`, "unquoted_value", false},

	// single_quotes
	{"single key and value", `{'a': 'b'}`, `{"a":"b"}`, "single_quotes", false},
	{"single with double inside", `{'a': 'say "hi"'}`, `{"a":"say \"hi\""}`, "single_quotes", false},
	{"single escaped apostrophe", `{'a': 'it\'s'}`, `{"a":"it's"}`, "single_quotes", false},
	{"single bare apostrophe", `{'a': 'it's ok'}`, `{"a":"it's ok"}`, "single_quotes", false},
	{"single rock n roll", `['rock 'n' roll', 'x']`, `["rock 'n' roll","x"]`, "single_quotes", false},
	{"single python hex escape", `['a\x41\x00']`, `["a\u0041\u0000"]`, "single_quotes python_literals", false},
	{"double python hex escape", `{"a": "x\x7e"}`, `{"a":"x\u007e"}`, "python_literals", false},
	{"single keeps escapes", `['a\nb\\c\u00e9']`, `["a\nb\\c\u00e9"]`, "single_quotes", false},
	{"single braces inside", `{'t': '{x: [1, 2]}'}`, `{"t":"{x: [1, 2]}"}`, "single_quotes", false},
	{"single top level", `'hello'`, `"hello"`, "single_quotes", false},
	{"single escaped double", `['a\"b']`, `["a\"b"]`, "single_quotes", false},
	{"double with escaped apostrophe", `{"a": "it\'s"}`, `{"a":"it's"}`, "single_quotes", false},
	{"single string missing comma", `['a' 'b']`, `["a","b"]`, "single_quotes missing_comma", false},
	{"single empty", `{'a': ''}`, `{"a":""}`, "single_quotes", false},

	// smart_quotes
	{"smart double", `{“a”: “b”}`, `{"a":"b"}`, "smart_quotes", false},
	{"smart single", `{‘a’: ‘b’}`, `{"a":"b"}`, "smart_quotes", false},
	{"smart apostrophe inside", `{“a”: ‘it’s’}`, `{"a":"it’s"}`, "smart_quotes", false},
	{"smart quotes inside normal string kept", `{"a": "“quoted” ‘x’"}`, `{"a":"“quoted” ‘x’"}`, "", false},
	{"smart with double inside", `[“say "x"”]`, `["say \"x\""]`, "smart_quotes", false},

	// unquoted_keys
	{"unquoted keys", `{a: 1, b_2: 2, $c: 3}`, `{"a":1,"b_2":2,"$c":3}`, "unquoted_keys", false},
	{"unquoted dashed key", `{content-type: "x"}`, `{"content-type":"x"}`, "unquoted_keys", false},
	{"unquoted numeric key", `{1: 'one'}`, `{"1":"one"}`, "unquoted_keys single_quotes", false},
	{"unquoted nested", `{a: {b: [1]}}`, `{"a":{"b":[1]}}`, "unquoted_keys", false},

	// trailing_comma
	{"trailing object", `{"a": 1,}`, `{"a":1}`, "trailing_comma", false},
	{"trailing array", `[1, 2,]`, `[1,2]`, "trailing_comma", false},
	{"trailing nested", `{"a": [1,], "b": {"c": 2,},}`, `{"a":[1],"b":{"c":2}}`, "trailing_comma", false},
	{"trailing with space", "[1 ,\n ]", `[1]`, "trailing_comma", false},
	{"leading comma", `[,1]`, `[1]`, "leading_comma", false},
	{"double comma", `[1,,2]`, ``, "", false},

	// missing_comma
	{"missing array", `[1 2 3]`, `[1,2,3]`, "missing_comma", false},
	{"missing object", `{"a": 1 "b": 2}`, `{"a":1,"b":2}`, "missing_comma", false},
	{"missing newline", "{\n\"a\": 1\n\"b\": [true\nfalse]\n}", `{"a":1,"b":[true,false]}`, "missing_comma", false},
	{"missing between containers", `[{"a": 1} {"b": 2} [3]]`, `[{"a":1},{"b":2},[3]]`, "missing_comma", false},
	{"missing before unquoted key", `{"a": "x" b: 2}`, `{"a":"x","b":2}`, "missing_comma unquoted_keys", false},

	// non_finite
	{"nan", `[NaN]`, `[null]`, "non_finite", false},
	{"infinities", `{"a": Infinity, "b": -Infinity, "c": +Infinity}`, `{"a":null,"b":null,"c":null}`, "non_finite", false},
	{"undefined", `{"a": undefined}`, `{"a":null}`, "non_finite", false},
	{"nan in string kept", `{"a": "NaN", "b": NaN}`, `{"a":"NaN","b":null}`, "non_finite", false},

	// control_chars
	{"raw newline", "{\"a\": \"x\ny\"}", `{"a":"x\ny"}`, "control_chars", false},
	{"raw tab and cr", "[\"a\tb\rc\"]", `["a\tb\rc"]`, "control_chars", false},
	{"raw terminal controls", "[\"a\x1b[31mb\x07\v\"]", `["a\u001b[31mb\u0007\u000b"]`, "control_chars", false},
	{"raw nul is not text", "[\"a\x00b\"]", ``, "", false},
	{"raw unit separator is not text", "{\"a\": \"x\x1fy\"}", ``, "", false},
	{"raw nul in a top string", "\"abc\x00\"", ``, "", false},
	{"raw nul in single quotes", "['a\x00']", ``, "", false},
	{"raw control in single", "['a\nb']", `["a\nb"]`, "single_quotes control_chars", false},
	{"raw control in key", "{\"a\nb\": 1}", `{"a\nb":1}`, "control_chars", false},

	// number_format
	{"leading zeros keep their digits", `[007, -0012, 00.5, 0]`, `["007","-0012","00.5",0]`, "unquoted_value", false},
	{"leading dot", `[.5, -.25]`, `[0.5,-0.25]`, "number_format", false},
	{"leading plus", `[+1, +0.5]`, `[1,0.5]`, "number_format", false},
	{"trailing dot", `[1., 2.e3]`, `[1.0,2.0e3]`, "number_format", false},
	{"hex is not a number", `{"n": 0x1F}`, `{"n":"0x1F"}`, "unquoted_value", false},
	{"bare words in brackets are prose", `Register [0x1F] is set`, ``, "", false},
	{"bare word in brackets alone is a list", `[0x1F]`, `["0x1F"]`, "unquoted_value", false},
	{"bare url in brackets alone", ` [https://example.com/a?b=1] `, `["https://example.com/a?b=1"]`, "unquoted_value", false},
	{"bare word in brackets alone with a comma after", "[e5],\n", `["e5"]`, "prose unquoted_value", false},
	{"bare word in brackets alone cut", `[truee`, `["truee"]`, "unquoted_value truncated", true},
	{"checkbox in prose is prose", "- [x] done\n- [x] tested", ``, "", false},
	{"unchecked task box is prose", "- [x] done\n  * [ ] todo", ``, "", false},
	{"task list before the handoff", "- [ ] todo\n{\"a\": 1}", `{"a":1}`, "prose", false},
	{"empty brackets in prose are a value", "Result: [ ]", `[]`, "prose", false},
	{"log prefix in prose is prose", `[INFO] started`, ``, "", false},
	{"double dot", `[1.2.3, 4]`, `["1.2.3",4]`, "unquoted_value", false},
	{"exponent without digits", `[1e]`, `[1e0]`, "number_format", false},
	{"lone dot", `{"a": .}`, ``, "", false},
	{"lone minus", `{"a": -}`, ``, "", false},

	// string_encoded_json
	{"encoded object", `"{\"a\":1}"`, `{"a":1}`, "string_encoded_json", false},
	{"encoded array", `"[1, 2]"`, `[1,2]`, "string_encoded_json", false},
	{"encoded with spaces", `  "  {\"a\": [true]}  "  `, `{"a":[true]}`, "string_encoded_json", false},
	// Only strictly valid content is decoded: "{a:2,}" and "[1,2,3,]" are
	// text that looks like JSON, and decoding them would change a string.
	{"encoded broken inside stays a string", `"{'a': True}"`, `"{'a': True}"`, "", false},
	{"encoded in single quotes", `'{"a": 1}'`, `{"a":1}`, "single_quotes string_encoded_json", false},
	{"encoded twice stays string", `"\"{\\\"a\\\":1}\""`, `"\"{\\\"a\\\":1}\""`, "", false},
	{"string not json stays", `"{not json"`, `"{not json"`, "", false},
	{"string with json and more stays", `"{\"a\":1} extra"`, `"{\"a\":1} extra"`, "", false},
	{"nested string json stays", `{"a": "{\"b\":1}"}`, `{"a":"{\"b\":1}"}`, "", false},

	// concatenated
	{"concatenated two", `{"a": 1}{"a": 2}`, `{"a":2}`, "concatenated", false},
	{"ndjson", "{\"a\": 1}\n{\"a\": 2}\n{\"a\": 3}\n", `[{"a":1},{"a":2},{"a":3}]`, "concatenated", false},
	{"concatenated arrays", `[1] [2]`, `[2]`, "concatenated", false},
	{"concatenated last truncated", `{"a": 1} {"a": 2`, `{"a":1}`, "concatenated", false},
	{"concatenated broken", `{'a': 1}{'a': 2,}`, `{"a":2}`, "concatenated single_quotes trailing_comma", false},

	// truncated
	{"cut mid string", `{"a": "hel`, `{"a":"hel"}`, "truncated", true},
	{"cut mid escape", `{"a": "x\`, `{"a":"x"}`, "truncated", true},
	{"cut mid unicode", `{"a": "x\u00`, `{"a":"x"}`, "truncated", true},
	{"cut after surrogate", `["\ud83d`, `["\ud83d"]`, "truncated", true},
	{"cut mid number", `[1, 23`, `[1,23]`, "truncated", true},
	{"cut after decimal point", `[1.`, `[1.0]`, "truncated", true},
	{"cut after exponent", `[1e`, `[1e0]`, "truncated", true},
	{"cut after exponent sign", `[2E-`, `[2E-0]`, "truncated", true},
	{"cut after minus", `[-`, `[-0]`, "truncated", true},
	{"cut mid key keeps what was written", `{"a": 1, "ke`, `{"a":1,"ke":null}`, "truncated missing_value", true},
	{"cut mid first key", `{"foo`, `{"foo":null}`, "truncated missing_value", true},
	{"cut mid unquoted key", `{"a": 1, ke`, `{"a":1}`, "unquoted_keys truncated", true},
	{"cut after key", `{"a": 1, "b"`, `{"a":1,"b":null}`, "missing_value truncated", true},
	{"cut after colon", `{"a": 1, "b":`, `{"a":1,"b":null}`, "missing_value truncated", true},
	{"cut after first colon", `{"a":`, `{"a":null}`, "missing_value truncated", true},
	{"cut after comma", `{"a": 1,`, `{"a":1}`, "truncated", true},
	{"cut after array comma", `[1, 2, `, `[1,2]`, "truncated", true},
	{"cut after open", `{`, `{}`, "truncated", true},
	{"cut nested", `{"a": [1, {"b": [true`, `{"a":[1,{"b":[true]}]}`, "truncated", true},
	{"cut literal true", `[tru`, `[true]`, "truncated", true},
	{"cut literal false", `{"a": fa`, `{"a":false}`, "truncated", true},
	{"cut literal null", `[n`, `[null]`, "truncated", true},
	{"cut python literal", `[Tr`, `[true]`, "python_literals truncated", true},
	{"cut None", `[No`, `[null]`, "python_literals truncated", true},
	{"cut infinity", `[-Inf`, `[null]`, "non_finite truncated", true},
	{"cut single quoted", `{'a': 'b`, `{"a":"b"}`, "single_quotes truncated", true},
	{"cut raw newline string", "{\"a\": \"x\ny", `{"a":"x\ny"}`, "control_chars truncated", true},
	{"cut with prose before", `Here: {"a": [1, 2`, `{"a":[1,2]}`, "prose truncated", true},
	{"cut in fence", "```json\n{\"a\": \"b", `{"a":"b"}`, "code_fence truncated", true},
	{"cut after trailing comma array", `[1, [2,`, `[1,[2]]`, "truncated", true},
	{"cut top string", `"abc`, `"abc"`, "truncated", true},
	{"cut top literal", `tru`, `true`, "truncated", true},

	// missing_colon
	{"missing colon number", `{"count" 3}`, `{"count":3}`, "missing_colon", false},
	{"missing colon string and array", `{"a" "b", "c" [1]}`, `{"a":"b","c":[1]}`, "missing_colon", false},
	{"missing colon object", `{"xs" {"y" null}}`, `{"xs":{"y":null}}`, "missing_colon", false},
	{"missing colon smart quoted key", `{“a” true}`, `{"a":true}`, "smart_quotes missing_colon", false},
	{"missing colon one", `{"a" 1}`, `{"a":1}`, "missing_colon", false},
	{"missing colon newline", "{\n  \"a\"\n  1\n}", `{"a":1}`, "missing_colon", false},
	{"missing colon unquoted key refused", `{a 1}`, ``, "", false},
	{"missing colon before comma refused", `{"a" , 1}`, ``, "", false},

	// ellipsis
	{"ellipsis dots", `["red", "green", ...]`, `["red","green"]`, "ellipsis", false},
	{"ellipsis character", `["red", "green", …]`, `["red","green"]`, "ellipsis", false},
	{"ellipsis between", `[1, ..., 5]`, `[1,5]`, "ellipsis", false},
	{"ellipsis without comma", `[1, 2 ...]`, `[1,2]`, "ellipsis", false},
	{"ellipsis then trailing comma", `[1, ...,]`, `[1]`, "ellipsis trailing_comma", false},
	{"ellipsis nested", `{"xs": [1, 2, ...], "n": 2}`, `{"xs":[1,2],"n":2}`, "ellipsis", false},
	{"ellipsis in object", `{"a": 1, ...}`, `{"a":1}`, "ellipsis", false},
	{"ellipsis multiline", "[\n  {\"id\": 1},\n  …\n]", `[{"id":1}]`, "ellipsis", false},
	{"ellipsis in strings kept", `["...", "…", "a..."]`, `["...","…","a..."]`, "", false},
	{"ellipsis alone", `[...]`, `[]`, "ellipsis", false},
	{"ellipsis as a value refused", `{"a": ...}`, ``, "", false},
	{"four dots refused", `[1, ....]`, ``, "", false},

	// mismatched_closer
	{"closer missing inner", `{"xs": ["p", "q"}`, `{"xs":["p","q"]}`, "mismatched_closer", false},
	{"closer missing two", `{"a": [[1, 2}`, `{"a":[[1,2]]}`, "mismatched_closer", false},
	{"closer typo before member", `{"a": [1, 2}, "b": 3}`, `{"a":[1,2],"b":3}`, "mismatched_closer", false},
	{"closer typo before closer", `{"a": [1, 2}}`, `{"a":[1,2]}`, "mismatched_closer", false},
	{"closer missing inner object", `{"a": {"xs": [1, 2}, "b": 3}`, `{"a":{"xs":[1,2]},"b":3}`, "mismatched_closer", false},
	{"closer typo in array", `[{"a": 1], [2]]`, `[{"a":1},[2]]`, "mismatched_closer", false},
	{"closer lone wrong array", `[1, 2}`, `[1,2]`, "mismatched_closer", false},
	{"closer lone wrong object", `{"a": 1]`, `{"a":1}`, "mismatched_closer", false},
	{"closer after trailing comma", `{"xs": ["p", "q",}`, `{"xs":["p","q"]}`, "trailing_comma mismatched_closer", false},
	{"closer after object trailing comma", `[{"a": 1,]`, `[{"a":1}]`, "trailing_comma mismatched_closer", false},
	{"closer on empty", `[}`, `[]`, "mismatched_closer", false},

	// escaped_quotes
	{"escaped object", `{\"name\": \"x\"}`, `{"name":"x"}`, "escaped_quotes", false},
	{"escaped nested", `{\"a\": [1, \"b\"], \"c\": {\"d\": null}}`, `{"a":[1,"b"],"c":{"d":null}}`, "escaped_quotes", false},
	{"escaped array", `[\"a\", \"b\"]`, `["a","b"]`, "escaped_quotes", false},
	{"escaped pretty", `{\n  \"a\": \"line\\nnext\",\n  \"q\": \"say \\\"hi\\\"\"\n}`, `{"a":"line\nnext","q":"say \"hi\""}`, "escaped_quotes", false},
	{"escaped backslash", `{\"path\": \"C:\\\\dir\"}`, `{"path":"C:\\dir"}`, "escaped_quotes", false},
	{"escaped regex", `{\"re\": \"\d+\"}`, `{"re":"\\d+"}`, "escaped_quotes invalid_escapes", false},
	{"escaped unicode", `{\"e\": \"\u00e9\", \"f\": \"\\u00e9\"}`, `{"e":"\u00e9","f":"\u00e9"}`, "escaped_quotes", false},
	{"escaped line feed in string", `{\"t\": \"a\nb\"}`, `{"t":"a\nb"}`, "escaped_quotes", false},
	{"escaped in prose", `The result was "{\"ok\": true}" as expected`, `{"ok":true}`, "prose escaped_quotes", false},
	{"escaped missing comma", `{\"a\": 1 \"b\": 2}`, `{"a":1,"b":2}`, "escaped_quotes missing_comma", false},
	{"escaped cut", `{\"a\": \"x`, `{"a":"x"}`, "escaped_quotes truncated", true},

	// inner_quotes
	{"inner quotes word", `{"s": "she wrote "done" twice"}`, `{"s":"she wrote \"done\" twice"}`, "inner_quotes", false},
	{"inner quote inches", `{"size": "a 12" pipe"}`, `{"size":"a 12\" pipe"}`, "inner_quotes", false},
	{"inner quote in array", `["a 12" pipe", "x"]`, `["a 12\" pipe","x"]`, "inner_quotes", false},
	{"inner quotes top level", `"she wrote "done" twice"`, `"she wrote \"done\" twice"`, "inner_quotes", false},
	{"inner quotes title", `{"title": "The "Best" Movie", "year": 1999}`, `{"title":"The \"Best\" Movie","year":1999}`, "inner_quotes", false},
	{"inner quotes at end", `["He said "hi"", "x"]`, `["He said \"hi\"","x"]`, "inner_quotes", false},
	{"inner quotes time", `{"t": "at "12:30" sharp"}`, `{"t":"at \"12:30\" sharp"}`, "inner_quotes", false},
	{"inner quotes number", `["the "12" items"]`, `["the \"12\" items"]`, "inner_quotes", false},
	{"inner quote before a closer at the top level", `"the list [1, 2"] more"`, `"the list [1, 2\"] more"`, "inner_quotes", false},
	{"inner quote before a brace at the top level", `"the set {a, b"} more"`, `"the set {a, b\"} more"`, "inner_quotes", false},
	{"inner quote guess open to the end is undone", `{"a": "x" y}`, ``, "", false},
	{"inner quote guess in cut output is undone", `{"s": "she wrote "done" twi`, ``, "", false},
	{"quote before quoted key closes", `{"a": "x" "b": 2}`, `{"a":"x","b":2}`, "missing_comma", false},
	{"quote before literal closes", `["x" true, "y" 12]`, `["x",true,"y",12]`, "missing_comma", false},
	{"quote before comment closes", "{\"a\": \"x\" // c\n}", `{"a":"x"}`, "comments", false},
	{"quote before line break closes", "{\"a\": \"x\"\n\"b\": 1}", `{"a":"x","b":1}`, "missing_comma", false},

	// invalid_escapes
	{"windows path", `{"p": "D:\data\logs"}`, `{"p":"D:\\data\\logs"}`, "invalid_escapes", false},
	{"regex", `{"r": "\d+\.\d*"}`, `{"r":"\\d+\\.\\d*"}`, "invalid_escapes", false},
	{"valid escapes keep their meaning", `{"p": "C:\new\table\b\f\r\/\"\\\u00e9"}`, `{"p":"C:\new\table\b\f\r\/\"\\\u00e9"}`, "", false},
	{"not hex after u", `{"p": "C:\users"}`, `{"p":"C:\\users"}`, "invalid_escapes", false},
	{"bad unicode escape", `["\u12G4"]`, `["\\u12G4"]`, "invalid_escapes", false},
	{"unicode escape ended by the quote", `"\u26"`, ``, "", false},
	{"unicode escape ended by the quote in an object", `{"a": "x\u2"}`, ``, "", false},
	{"bell escape is ambiguous", `"\a"`, ``, "", false},
	{"vertical tab escape is ambiguous", `{"p": "C:\vm"}`, ``, "", false},
	{"bell escape in a path fails the whole value", `{"p": "C:\apps", "q": {"r": 1}}`, ``, "", false},
	{"python hex escape ended by the quote", `["\x4"]`, `["\\x4"]`, "invalid_escapes", false},
	{"bad escape", `{"a": "x\qy"}`, `{"a":"x\\qy"}`, "invalid_escapes", false},
	{"bad escape top string", `"abc\q"`, `"abc\\q"`, "invalid_escapes", false},
	{"bad python hex", `{"a": "\xZZ"}`, `{"a":"\\xZZ"}`, "invalid_escapes", false},
	{"bad escape single quoted", `['C:\Users\me']`, `["C:\\Users\\me"]`, "single_quotes invalid_escapes", false},
	{"backslash before space", `{"a": "end\ x"}`, `{"a":"end\\ x"}`, "invalid_escapes", false},

	// Adversarial content: strings are never changed.
	{"string with braces", `{'a': '}{][', b: 1,}`, `{"a":"}{][","b":1}`, "single_quotes unquoted_keys trailing_comma", false},
	{"string with fence and comment", "{'a': \"``` // /* */ '\", }", "{\"a\":\"``` // /* */ '\"}", "single_quotes trailing_comma", false},
	{"string with escaped quotes", `{"a": "x\"y\\", b: 2}`, `{"a":"x\"y\\","b":2}`, "unquoted_keys", false},
	{"string with backslash end", `['C:\\dir\\']`, `["C:\\dir\\"]`, "single_quotes", false},
	{"string with unicode", `{'ключ': 'значение 😀'}`, `{"ключ":"значение 😀"}`, "single_quotes", false},
	{"unicode surrogate pair", `{'e': '\ud83d\ude00'}`, `{"e":"\ud83d\ude00"}`, "single_quotes", false},
	{"string with html", `{'h': '<a href="/x">y</a>'}`, `{"h":"<a href=\"/x\">y</a>"}`, "single_quotes", false},
	{"python style everything", "{'ok': True, 'items': [1, 2,], 'note': None, 'text': 'it\\'s \"fine\"',}", `{"ok":true,"items":[1,2],"note":null,"text":"it's \"fine\""}`, "single_quotes python_literals trailing_comma", false},
	{"deep nesting ok", deep(128, "1"), deep(128, "1"), "", false},
	{"deep nesting broken ok", deep(128, "True"), deep(128, "true"), "python_literals", false},
}

// errorCase is an input that cannot be repaired, with where the error is.
type errorCase struct {
	name      string
	in        string
	line, col int
}

var errorCases = []errorCase{
	{"missing colon after unquoted key", `{"a": 1, b 2}`, 1, 12},
	{"missing colon before comma", `{"a" , 1}`, 1, 6},
	{"ellipsis as value", `{"a": ...}`, 1, 7},
	{"double comma", `[1,,2]`, 1, 4},
	{"lone dot", `[1, .]`, 1, 5},
	{"bad key", `{"a": 1, [1]: 2}`, 1, 10},
	{"nested fragment not taken", `{"a": {"b": 1}, x} and no more`, 1, 18},
	{"inner value of a failed value not taken", `{"a": @, "b": {"c": 1}}`, 1, 7},
	{"bell escape", "{\"p\": \"C:\\apps\"}", 1, 10},
	{"vertical tab escape on line 2", "{\"a\": 1,\n \"p\": \"\\v\"}", 2, 8},
	{"unicode escape cut short by the quote", `["x\u26"]`, 1, 4},
	{"raw NUL in a string", "{\"a\": \"b\x00\"}", 1, 9},
	{"raw unit separator in a single-quoted string", "['\x1f']", 1, 3},
}

// deep nests value in n arrays.
func deep(n int, value string) string {
	b := make([]byte, 0, 2*n+len(value))
	for range n {
		b = append(b, '[')
	}
	b = append(b, value...)
	for range n {
		b = append(b, ']')
	}
	return string(b)
}
