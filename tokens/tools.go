package tokens

import (
	"encoding/json"
	"strings"

	"github.com/steadyllm/steady/providers"
)

// toolConstants are the fixed costs of the tool definitions, as OpenAI's cookbook "How to
// count tokens with tiktoken" counts them (num_tokens_for_tools): per function (funcInit),
// once for a function's properties (propInit), per property (propKey), per property with an
// enum (enumInit, negative) and per enum item (enumItem), and once after all the functions
// (funcEnd). The cookbook checks them against the API: 101 prompt tokens for its weather
// example on gpt-4o and gpt-4o-mini, 105 on gpt-3.5-turbo and gpt-4 (TestCookbook_Tools).
type toolConstants struct {
	funcInit, propInit, propKey, enumInit, enumItem, funcEnd int
}

var (
	// toolsO200k are the cookbook's constants for gpt-4o and gpt-4o-mini, used for every
	// model of the o200k_base family.
	toolsO200k = toolConstants{funcInit: 7, propInit: 3, propKey: 3, enumInit: -3, enumItem: 3, funcEnd: 12}
	// toolsCl100k are its constants for gpt-3.5-turbo and gpt-4: only funcInit differs.
	toolsCl100k = toolConstants{funcInit: 10, propInit: 3, propKey: 3, enumInit: -3, enumItem: 3, funcEnd: 12}
)

// maxSchemaDepth bounds how deep ToolTokens follows nested properties: a schema nested deeper
// is a hostile or broken one, and its deeper levels are not counted.
const maxSchemaDepth = 32

// ToolTokens returns what the tool definitions cost in the prompt, by the cookbook's rule:
// for each function, its name and description (one trailing period dropped) as
// "name:description", and for each property "name:type:description" and its enum items,
// plus the fixed costs of toolConstants. The constants are gpt-4o's for models of the
// o200k_base family, gpt-4's for cl100k_base (model's family, or enc's when model is
// unknown).
//
// Beyond the cookbook, which reads only a function's top-level properties: the properties of
// a nested object (a property's, or an array's items') are counted the same way, with their
// own propInit, since the model is shown them too; a type given as a list is written
// "string | null". Neither extension was checked against the API. A tool given as Raw
// (a provider's own definition) counts funcInit and its JSON text when its System is OpenAI's,
// and nothing otherwise, since no other system's tool is sent to OpenAI. Parameters that are
// not a JSON object count as their text. No tools count 0.
func ToolTokens(enc Encoding, model string, tools []providers.Tool) int {
	if enc == nil || len(tools) == 0 {
		return 0
	}
	c := toolsO200k
	if fam := EncodingForModel(model); fam == Cl100kBase || (fam == "" && enc.Name() == Cl100kBase) {
		c = toolsCl100k
	}
	n, counted := 0, false
	for i := range tools {
		t := &tools[i]
		if t.Raw != nil {
			if t.System == providers.SystemOpenAI {
				n += c.funcInit + enc.Count(string(t.Raw))
				counted = true
			}
			continue
		}
		counted = true
		n += c.funcInit + enc.Count(t.Name+":"+strings.TrimSuffix(t.Description, "."))
		if len(t.Parameters) == 0 {
			continue
		}
		var params schemaNode
		if json.Unmarshal(t.Parameters, &params) != nil {
			n += enc.Count(string(t.Parameters))
			continue
		}
		n += c.properties(enc, params.Properties, 0)
	}
	if counted {
		n += c.funcEnd
	}
	return n
}

// schemaNode is the part of a JSON Schema the tool rule reads.
type schemaNode struct {
	Type        json.RawMessage        `json:"type"`
	Description string                 `json:"description"`
	Enum        []json.RawMessage      `json:"enum"`
	Properties  map[string]*schemaNode `json:"properties"`
	Items       *schemaNode            `json:"items"`
}

// properties counts a properties object: propInit once, then each property, and the
// properties nested in it.
func (c toolConstants) properties(enc Encoding, props map[string]*schemaNode, depth int) int {
	if len(props) == 0 || depth >= maxSchemaDepth {
		return 0
	}
	n := c.propInit
	for name, p := range props {
		if p == nil {
			p = &schemaNode{}
		}
		n += c.propKey
		if len(p.Enum) > 0 {
			n += c.enumInit
			for _, item := range p.Enum {
				n += c.enumItem + enc.Count(jsonText(item))
			}
		}
		n += enc.Count(name + ":" + typeText(p.Type) + ":" + strings.TrimSuffix(p.Description, "."))
		n += c.properties(enc, p.Properties, depth+1)
		if p.Items != nil {
			n += c.properties(enc, p.Items.Properties, depth+1)
		}
	}
	return n
}

// typeText is a schema's "type" as the rule writes it: the name, or the names of a list
// joined by " | ".
func typeText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return one
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil {
		return strings.Join(many, " | ")
	}
	return string(raw)
}

// jsonText is an enum item as the model reads it: a string's value, any other value's JSON.
func jsonText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// SchemaTokens returns what the JSON Schema of a structured output (ChatRequest.Schema) is
// counted as: its name ("response" when empty), description and schema text, as sent. OpenAI
// documents neither how it shows the schema to the model nor what the wrapper around it costs,
// so this is the schema's own size, not a verified rule; the few tokens of the wrapper are
// missing from it. A nil schema counts 0.
func SchemaTokens(enc Encoding, schema *providers.JSONSchema) int {
	if enc == nil || schema == nil {
		return 0
	}
	name := schema.Name
	if name == "" {
		name = "response"
	}
	return enc.Count(name) + enc.Count(schema.Description) + enc.Count(string(schema.Schema))
}
