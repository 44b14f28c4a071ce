#pragma once
// The scenario format as JSON Schema (draft 2020-12), generated from scenario_fields() so that it
// can never list a field the loader does not know, or miss one (issue 10). Editors use it for
// completion and inline checks (`stalesim schema > stalesim.schema.json`; REFERENCE.md "Scenario reference").
//
// The schema states types, units (in descriptions), bounds, allowed values, defaults and unknown
// keys. What it cannot state is left to the loader: which fields apply under which other values
// ("applies to ssp only (policy.type)" is written in the description instead), and contradictions
// between fields. A scenario the schema accepts may still be refused by `stalesim validate`; a
// scenario the loader accepts always satisfies the schema.

#include <nlohmann/json.hpp>

namespace stalesim {

// The schema as one JSON document; keys in documentation order.
nlohmann::ordered_json scenario_json_schema();

}  // namespace stalesim
